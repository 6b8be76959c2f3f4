package agent

import (
	"testing"

	"k8s.io/client-go/rest"
)

// TestEventClientHasItsOwnLimits: events get the kubelet's event limits
// (eventRecordQPS, eventBurst) where the config sets none, and keep the
// config's otherwise (the unthrottled in-process agent of kite server).
func TestEventClientHasItsOwnLimits(t *testing.T) {
	cases := []struct {
		name                      string
		qps                       float32
		burst                     int
		wantQPS, wantEventQPS     float32
		wantBurst, wantEventBurst int
	}{
		{"kubelet defaults", 0, 0, DefaultQPS, DefaultEventQPS, DefaultBurst, DefaultEventBurst},
		{"unthrottled", -1, 0, -1, -1, DefaultBurst, DefaultBurst},
		{"set by the embedder", 20, 30, 20, 20, 30, 30},
	}
	for _, c := range cases {
		cfg := &rest.Config{Host: "https://127.0.0.1:1", QPS: c.qps, Burst: c.burst}
		main, events := clientConfig(cfg), eventClientConfig(cfg)
		if main.QPS != c.wantQPS || main.Burst != c.wantBurst || events.QPS != c.wantEventQPS || events.Burst != c.wantEventBurst {
			t.Errorf("%s: client %v/%d, events %v/%d; want %v/%d and %v/%d", c.name, main.QPS, main.Burst, events.QPS, events.Burst,
				c.wantQPS, c.wantBurst, c.wantEventQPS, c.wantEventBurst)
		}
		if cfg.QPS != c.qps || cfg.Burst != c.burst {
			t.Errorf("%s: the config given was changed", c.name)
		}
	}
}
