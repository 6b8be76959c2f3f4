package kubetypes

import "fmt"

// Reasons of problems, in the style of upstream's event reasons.
const (
	// ReasonFailedToRead: a manifest path or URL could not be read.
	ReasonFailedToRead = "FailedToRead"
	// ReasonFailedToParse: a manifest is not a pod (or pod list) we can decode.
	ReasonFailedToParse = "FailedToParse"
	// ReasonFailedValidation: a manifest decoded but is not a valid pod.
	ReasonFailedValidation = "FailedValidation"
	// ReasonDuplicatePod: a second definition of a pod full name was refused.
	ReasonDuplicatePod = "DuplicatePod"
)

// Problem is input that a source or the merge could not use. Nothing is
// changed because of it: the pods already running stay as they were.
type Problem struct {
	// Source is the source name ("file", "http", "api").
	Source string
	// Reason is one of the Reason constants.
	Reason string
	// Where is the file path or URL concerned; empty when there is none.
	Where string
	// Err says what went wrong.
	Err error
}

func (p Problem) String() string {
	if p.Where == "" {
		return fmt.Sprintf("%s source: %s: %v", p.Source, p.Reason, p.Err)
	}
	return fmt.Sprintf("%s source: %s: %s: %v", p.Source, p.Reason, p.Where, p.Err)
}

// ProblemReporter receives problems as they are found, in addition to the
// log line the reporter's caller writes. The agent wires it to a Warning
// event on its Node when the API server is reachable. Implementations must be
// safe for concurrent use and must not block.
type ProblemReporter interface {
	ReportProblem(Problem)
}

// ProblemReporterFunc adapts a function to ProblemReporter.
type ProblemReporterFunc func(Problem)

// ReportProblem calls f(p).
func (f ProblemReporterFunc) ReportProblem(p Problem) { f(p) }

var _ ProblemReporter = ProblemReporterFunc(nil)
