package cri_test

import (
	"os"
	"testing"

	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

func TestMain(m *testing.M) { os.Exit(critest.Main(m)) }
