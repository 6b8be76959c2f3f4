package podsync

import (
	"strings"

	"github.com/kite-project/kite/agent/podactions"
	"github.com/kite-project/kite/agent/podstatus"
	"github.com/kite-project/kite/agent/prober"
)

// probeResults are the published results of one container instance's
// probes; a probe without a result yet is absent.
type probeResults struct {
	results map[prober.Type]prober.Result
}

// recordProbe keeps a probe update for the decisions.
func (m *Manager) recordProbe(u prober.Update) {
	id := bareID(u.ContainerID)
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.probes[id]
	if r == nil {
		r = &probeResults{results: map[prober.Type]prober.Result{}}
		m.probes[id] = r
	}
	r.results[u.Type] = u.Result
}

func (m *Manager) result(id string, t prober.Type) (prober.Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.probes[id]
	if r == nil {
		return 0, false
	}
	res, ok := r.results[t]
	return res, ok
}

// probeView answers podactions' and podstatus' questions from the
// results; a container is only asked about for a probe it has.
type probeView struct{ m *Manager }

var (
	_ podactions.Probes = probeView{}
	_ podstatus.Probes  = probeView{}
)

func (p probeView) Liveness(id string) (failed, known bool) {
	r, ok := p.m.result(id, prober.Liveness)
	return ok && r == prober.Failure, ok
}

func (p probeView) Startup(id string) (succeeded, failed, known bool) {
	r, ok := p.m.result(id, prober.Startup)
	if !ok || r == prober.Unknown {
		return false, false, false
	}
	return r == prober.Success, r == prober.Failure, true
}

func (p probeView) Ready(id string) bool {
	r, ok := p.m.result(id, prober.Readiness)
	return ok && r == prober.Success
}

func (p probeView) Started(id string) bool {
	r, ok := p.m.result(id, prober.Startup)
	return ok && r == prober.Success
}

// bareID strips the "<runtime>://" of a status's container ID.
func bareID(id string) string {
	if _, rest, ok := strings.Cut(id, "://"); ok {
		return rest
	}
	return id
}
