package nodeipam_test

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { srv = s }) }
