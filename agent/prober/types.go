package prober

import "fmt"

// Type is which of a container's three probes something is about.
type Type int8

const (
	Liveness Type = iota
	Readiness
	Startup
)

// String is the capitalised name upstream's events start with
// ("Liveness probe failed: ...").
func (t Type) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return fmt.Sprintf("Type(%d)", int8(t))
}

// Result is a probe's published state for one container instance.
type Result int8

const (
	// Unknown is a startup probe's state before its first verdict.
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Unknown:
		return "Unknown"
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return fmt.Sprintf("Result(%d)", int8(r))
}

// initialResult is what a probe reports for a container it has not judged
// yet, as upstream's workers start: a container is not ready until proven
// ready, is alive until proven dead, and has neither started nor failed to.
func initialResult(t Type) Result {
	switch t {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}
