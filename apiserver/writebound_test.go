package apiserver

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// BenchmarkWriteBoundArmDisarm is what bounding one write of a watch
// costs (a watch arms and disarms around each write and flush).
func BenchmarkWriteBoundArmDisarm(b *testing.B) {
	bound := newWriteBound(httptest.NewRecorder())
	defer bound.stop()
	for b.Loop() {
		bound.arm(DefaultWriteTimeout)
		bound.disarm()
	}
}

// deadlineRecorder is a response writer that records the write
// deadlines set on it (through http.ResponseController).
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	mu  sync.Mutex
	set []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.set = append(d.set, t)
	return nil
}

// TestWriteBoundCutsOnlyAStalledWrite checks when a bound moves the write
// deadline into the past: when a write outlasts it, and never once the
// write is done (disarmed) or the handler is (stopped).
func TestWriteBoundCutsOnlyAStalledWrite(t *testing.T) {
	tests := []struct {
		name string
		then func(*writeBound)
		cut  bool
	}{
		{"a write that outlasts its time", func(*writeBound) {}, true},
		{"a write done in time", (*writeBound).disarm, false},
		{"a handler that returned", (*writeBound).stop, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			bound := newWriteBound(w)
			bound.arm(20 * time.Millisecond)
			tc.then(bound)
			time.Sleep(100 * time.Millisecond)
			bound.stop()
			w.mu.Lock()
			defer w.mu.Unlock()
			cut := len(w.set) == 1 && w.set[0].Before(time.Now())
			if cut != tc.cut || len(w.set) > 1 {
				t.Fatalf("deadlines set %v, want a cut: %v", w.set, tc.cut)
			}
		})
	}
}
