package prober

// Results looks up published results by container instance ID, the way
// upstream's results managers answer the pod sync and the status
// generator. IDs may be bare or in the CRI's "<runtime>://<id>" form. A
// container whose probe has not published for this instance is not known;
// whether a container has the probe at all is the caller's to check.
type Results struct{ m *Manager }

// Results returns the by-instance view of m's results.
func (m *Manager) Results() Results { return Results{m: m} }

func (r Results) get(containerID string, t Type) (Result, bool) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	res, ok := r.m.byID[instanceKey{bareID(containerID), t}]
	return res, ok
}

// Ready says whether the instance's last published readiness is Success.
func (r Results) Ready(containerID string) bool {
	res, _ := r.get(containerID, Readiness)
	return res == Success
}

// Started says whether the instance's startup probe has succeeded.
func (r Results) Started(containerID string) bool {
	res, _ := r.get(containerID, Startup)
	return res == Success
}

// Liveness says whether the instance failed its liveness probe, and
// whether it has a liveness result at all.
func (r Results) Liveness(containerID string) (failed, known bool) {
	res, ok := r.get(containerID, Liveness)
	return ok && res == Failure, ok
}

// Startup says whether the instance's startup probe succeeded or failed;
// known is false until it has one of these verdicts (Unknown, the initial
// result, is no verdict).
func (r Results) Startup(containerID string) (succeeded, failed, known bool) {
	res, ok := r.get(containerID, Startup)
	if !ok || res == Unknown {
		return false, false, false
	}
	return res == Success, res == Failure, true
}
