// Command conformance-report reads the Ginkgo JSON reports of a
// conformance run (scripts/conformance writes one per pass) and prints
// the figure: one line per SIG, "sig-node: N passed, M failed, K skipped",
// then the total as the last line, "N passed, M failed". With -failures
// FILE it also writes one tab-separated row per failing test (sig, state,
// seconds, test, first line of the failure), the shape of
// docs/conformance.md's cause list.
//
// It exits 1 when a test failed, 2 when a report cannot be read.
//
// Counting rules (why they are not Ginkgo's own summary):
//   - only It specs count; a suite node (SynchronizedBeforeSuite, ...)
//     that fails is printed on its own line, because it is not a test;
//   - a spec that Ginkgo filtered out is reported as "skipped" without a
//     message, one that skipped itself at run time (Skip(reason)) with its
//     reason: only the latter counts as skipped;
//   - the specs that the run selected (PreRunStats.SpecsThatWillRun) but
//     that have no result (a failed suite set-up, a crashed or interrupted
//     process) count as failed, so that the last line never shows a
//     broken run as a good one;
//   - specs that were selected but have no report at all are given with
//     -unreported N (a pass whose report was lost because a Ginkgo
//     process crashed and took the CLI's aggregated report with it, or
//     tests the runner left out because they would crash it), and those N
//     count as failed too;
//   - failed, timedout, panicked, interrupted and aborted are failures.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// report is the part of Ginkgo's types.Report that the figure needs.
type report struct {
	SuiteDescription string
	PreRunStats      struct{ SpecsThatWillRun int }
	SpecReports      []specReport
}

type specReport struct {
	ContainerHierarchyTexts  []string
	ContainerHierarchyLabels [][]string
	LeafNodeType             string
	LeafNodeText             string
	LeafNodeLabels           []string
	State                    string
	RunTime                  time.Duration
	Failure                  *struct{ Message string }
}

// tally is one SIG's count.
type tally struct{ passed, failed, skipped int }

func (t tally) add(o tally) tally {
	return tally{t.passed + o.passed, t.failed + o.failed, t.skipped + o.skipped}
}

// failure is one failing test, a row of the failures file.
type failure struct {
	sig, state, test, message string
	runTime                   time.Duration
}

// summary is the whole figure.
type summary struct {
	bySIG       map[string]tally
	failures    []failure
	suiteErrors []string // failed suite nodes, "<node>: <first line>"
	notRun      int      // selected specs without a result
	unreported  int      // selected specs without any report (-unreported)
}

const noSIG = "no-sig"

var sigInText = regexp.MustCompile(`\[(sig-[a-z-]+)\]`)

// sigOf is the spec's SIG: its sig-* label (framework.SIGDescribe adds
// one), else a [sig-*] tag in its text.
func sigOf(s specReport) string {
	for _, ls := range append(slices.Clone(s.ContainerHierarchyLabels), s.LeafNodeLabels) {
		for _, l := range ls {
			if strings.HasPrefix(l, "sig-") {
				return l
			}
		}
	}
	if m := sigInText.FindStringSubmatch(s.fullText()); m != nil {
		return m[1]
	}
	return noSIG
}

func (s specReport) fullText() string {
	return strings.TrimSpace(strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " "))
}

func (s specReport) message() string {
	if s.Failure == nil {
		return ""
	}
	return s.Failure.Message
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.ReplaceAll(s, "\t", " ")
}

// isFailure says whether a Ginkgo spec state is a failure.
func isFailure(state string) bool {
	switch state {
	case "failed", "timedout", "panicked", "interrupted", "aborted":
		return true
	}
	return false
}

// summarize counts the reports' specs. Each report is one pass.
func summarize(reports []report) summary {
	sum := summary{bySIG: map[string]tally{}}
	for _, r := range reports {
		results := 0
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" {
				if isFailure(s.State) {
					sum.suiteErrors = append(sum.suiteErrors, s.LeafNodeType+": "+firstLine(s.message()))
				}
				continue
			}
			var t tally
			switch {
			case s.State == "passed":
				t.passed = 1
			case isFailure(s.State):
				t.failed = 1
			case s.State == "skipped" && s.message() != "":
				t.skipped = 1
			default:
				continue // filtered out, or pending: not selected
			}
			sig := sigOf(s)
			if t.failed > 0 {
				sum.failures = append(sum.failures, failure{sig: sig, state: s.State, test: s.fullText(), message: firstLine(s.message()), runTime: s.RunTime})
			}
			sum.bySIG[sig] = sum.bySIG[sig].add(t)
			results++
		}
		if missing := r.PreRunStats.SpecsThatWillRun - results; missing > 0 {
			sum.notRun += missing
		}
	}
	return sum
}

// write prints the figure; the last line is the total.
func (sum summary) write(w io.Writer) {
	sigs := make([]string, 0, len(sum.bySIG))
	for sig := range sum.bySIG {
		sigs = append(sigs, sig)
	}
	slices.Sort(sigs)
	var total tally
	for _, sig := range sigs {
		t := sum.bySIG[sig]
		fmt.Fprintf(w, "%s: %d passed, %d failed, %d skipped\n", sig, t.passed, t.failed, t.skipped)
		total = total.add(t)
	}
	for _, e := range sum.suiteErrors {
		fmt.Fprintf(w, "suite node failed: %s\n", e)
	}
	if sum.notRun > 0 {
		fmt.Fprintf(w, "selected but without a result (counted as failed): %d\n", sum.notRun)
	}
	if sum.unreported > 0 {
		fmt.Fprintf(w, "selected but without any report, a pass's report lost or tests left out (counted as failed): %d\n", sum.unreported)
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", total.passed, total.failed+sum.notRun+sum.unreported)
}

func (sum summary) failed() bool {
	return len(sum.failures) > 0 || sum.notRun > 0 || sum.unreported > 0 || len(sum.suiteErrors) > 0
}

// writeFailures writes the failures file, sorted by SIG then test.
func (sum summary) writeFailures(w io.Writer) {
	fs := slices.Clone(sum.failures)
	slices.SortFunc(fs, func(a, b failure) int {
		return strings.Compare(a.sig+"\x00"+a.test, b.sig+"\x00"+b.test)
	})
	fmt.Fprintln(w, "sig\tstate\tseconds\ttest\tfailure (first line)")
	for _, f := range fs {
		fmt.Fprintf(w, "%s\t%s\t%.0f\t%s\t%s\n", f.sig, f.state, f.runTime.Seconds(), f.test, f.message)
	}
}

func readReports(paths []string) ([]report, error) {
	var all []report
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read report %s: %w", p, err)
		}
		var rs []report
		if err := json.Unmarshal(b, &rs); err != nil {
			return nil, fmt.Errorf("decode Ginkgo JSON report %s: %w", p, err)
		}
		all = append(all, rs...)
	}
	return all, nil
}

func main() {
	failuresPath := flag.String("failures", "", "write the failing tests, tab-separated, to this file")
	unreported := flag.Int("unreported", 0, "selected specs without any report: passes that lost theirs, tests left out (counted as failed)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: conformance-report [-failures FILE] [-unreported N] REPORT.json...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 && *unreported == 0 {
		flag.Usage()
		os.Exit(2)
	}
	reports, err := readReports(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance-report:", err)
		os.Exit(2)
	}
	sum := summarize(reports)
	sum.unreported = *unreported
	if *failuresPath != "" {
		f, err := os.Create(*failuresPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "conformance-report:", err)
			os.Exit(2)
		}
		sum.writeFailures(f)
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "conformance-report:", err)
			os.Exit(2)
		}
	}
	sum.write(os.Stdout)
	if sum.failed() {
		os.Exit(1)
	}
}
