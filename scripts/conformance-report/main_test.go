package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// spec builds one SpecReport of Ginkgo's JSON report.
func spec(sig, text, state, message string) map[string]any {
	s := map[string]any{
		"ContainerHierarchyTexts":  []string{"[" + sig + "] Thing"},
		"ContainerHierarchyLabels": [][]string{{sig}},
		"LeafNodeType":             "It",
		"LeafNodeText":             text,
		"LeafNodeLabels":           []string{"Conformance"},
		"State":                    state,
		"RunTime":                  int64(3e9),
	}
	if message != "" {
		s["Failure"] = map[string]any{"Message": message}
	}
	return s
}

func reportJSON(t *testing.T, willRun int, specs ...map[string]any) report {
	t.Helper()
	b, err := json.Marshal([]map[string]any{{
		"SuiteDescription": "Kubernetes e2e suite",
		"PreRunStats":      map[string]any{"TotalSpecs": 7000, "SpecsThatWillRun": willRun},
		"SpecReports":      specs,
	}})
	if err != nil {
		t.Fatal(err)
	}
	var rs []report
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	return rs[0]
}

func TestSummaryCountsPerSIGAndTotal(t *testing.T) {
	for _, tc := range []struct {
		name       string
		reports    func(t *testing.T) []report
		unreported int
		want       string
		wantFailed bool
	}{{
		name: "passes, failures of every failing state, a run-time skip, filtered specs left out",
		reports: func(t *testing.T) []report {
			return []report{reportJSON(t, 7,
				spec("sig-node", "a", "passed", ""),
				spec("sig-node", "b", "failed", "Expected\n<string>: DONE"),
				spec("sig-node", "c", "timedout", "A spec timeout occurred"),
				spec("sig-api-machinery", "d", "passed", ""),
				spec("sig-api-machinery", "e", "panicked", "nil pointer"),
				spec("sig-api-machinery", "f", "skipped", "Only supported for providers [gce]"),
				spec("sig-api-machinery", "g", "interrupted", "interrupted"),
				spec("sig-storage", "filtered", "skipped", ""),
				spec("sig-storage", "pending", "pending", ""),
			)}
		},
		want:       "sig-api-machinery: 1 passed, 2 failed, 1 skipped\nsig-node: 1 passed, 2 failed, 0 skipped\n2 passed, 4 failed\n",
		wantFailed: true,
	}, {
		name: "two passes add up",
		reports: func(t *testing.T) []report {
			return []report{
				reportJSON(t, 1, spec("sig-apps", "parallel", "passed", "")),
				reportJSON(t, 1, spec("sig-apps", "serial", "passed", "")),
			}
		},
		want: "sig-apps: 2 passed, 0 failed, 0 skipped\n2 passed, 0 failed\n",
	}, {
		name: "a failed suite set-up: the selected specs that did not run count as failed",
		reports: func(t *testing.T) []report {
			setup := map[string]any{"LeafNodeType": "SynchronizedBeforeSuite", "State": "failed",
				"Failure": map[string]any{"Message": "Failed to get kubernetes service ClusterIP: not found\nmore"}}
			return []report{reportJSON(t, 433, setup, spec("sig-node", "x", "skipped", ""))}
		},
		want: "suite node failed: SynchronizedBeforeSuite: Failed to get kubernetes service ClusterIP: not found\n" +
			"selected but without a result (counted as failed): 433\n0 passed, 433 failed\n",
		wantFailed: true,
	}, {
		name: "a pass whose report was lost: its selected specs count as failed",
		reports: func(t *testing.T) []report {
			return []report{reportJSON(t, 1, spec("sig-api-machinery", "serial", "passed", ""))}
		},
		unreported: 91,
		want: "sig-api-machinery: 1 passed, 0 failed, 0 skipped\n" +
			"selected but without any report, a pass's report lost or tests left out (counted as failed): 91\n1 passed, 91 failed\n",
		wantFailed: true,
	}, {
		name: "the SIG comes from the text when no label names one",
		reports: func(t *testing.T) []report {
			s := spec("sig-cli", "y", "passed", "")
			s["ContainerHierarchyLabels"] = [][]string{{"Conformance"}}
			plain := spec("sig-cli", "z", "passed", "")
			plain["ContainerHierarchyLabels"] = nil
			plain["ContainerHierarchyTexts"] = []string{"Untagged"}
			return []report{reportJSON(t, 2, s, plain)}
		},
		want: "no-sig: 1 passed, 0 failed, 0 skipped\nsig-cli: 1 passed, 0 failed, 0 skipped\n2 passed, 0 failed\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			sum := summarize(tc.reports(t))
			sum.unreported = tc.unreported
			var out strings.Builder
			sum.write(&out)
			if out.String() != tc.want {
				t.Errorf("figure:\n%s\nwant:\n%s", out.String(), tc.want)
			}
			if sum.failed() != tc.wantFailed {
				t.Errorf("failed() = %v, want %v", sum.failed(), tc.wantFailed)
			}
		})
	}
}

func TestFailuresFileRowsSortedBySIGWithFirstLine(t *testing.T) {
	sum := summarize([]report{reportJSON(t, 2,
		spec("sig-node", "b", "failed", "Expected\n<string>: DONE"),
		spec("sig-auth", "a", "failed", "pods is forbidden:\tno"),
	)})
	var out strings.Builder
	sum.writeFailures(&out)
	want := "sig\tstate\tseconds\ttest\tfailure (first line)\n" +
		"sig-auth\tfailed\t3\t[sig-auth] Thing a\tpods is forbidden: no\n" +
		"sig-node\tfailed\t3\t[sig-node] Thing b\tExpected\n"
	if out.String() != want {
		t.Errorf("failures file:\n%q\nwant:\n%q", out.String(), want)
	}
}
