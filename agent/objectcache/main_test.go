package objectcache

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

var shared *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { shared = s }) }
