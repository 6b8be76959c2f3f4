package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/workload"
)

// TestBenchAgainstKite runs kite bench at a tiny size against an
// in-process Kite through its kubeconfig, in protobuf, with JSON output.
func TestBenchAgainstKite(t *testing.T) {
	srv, err := kite.Start(t.Context(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"bench", "--kubeconfig", srv.KubeconfigPath(), "--content-type", "protobuf", "-o", "json",
		"--pods", "20", "--nodes", "4", "--writers", "2", "--watchers", "3", "--updates", "4", "--repeats", "1"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("kite bench: %v\n%s", err, errOut.String())
	}
	var report workload.Report
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("output is not a JSON report (%v):\n%s", err, out.String())
	}
	if report.ContentType != "application/vnd.kubernetes.protobuf" || report.Options.Pods != 20 || report.Options.Decode != workload.RawDecode || len(report.Results) == 0 {
		t.Fatalf("report %+v", report)
	}
	for _, r := range report.Results {
		if r.Delivery != nil && r.Delivery.Lost != 0 {
			t.Errorf("%s lost %d events", r.Name, r.Delivery.Lost)
		}
	}
	if !strings.Contains(errOut.String(), "kite bench: watch fan-out") {
		t.Errorf("no progress on stderr:\n%s", errOut.String())
	}
}

// TestBenchFlagMistakes checks that bad flag values are refused before
// anything connects.
func TestBenchFlagMistakes(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--content-type", "yaml"}, "--content-type must be json or protobuf"},
		{[]string{"bench", "-o", "wide"}, "--output must be table or json"},
		{[]string{"bench", "--decode", "fast"}, "--decode must be raw or client-go"},
		{[]string{"bench", "--decode", ""}, "--decode must be raw or client-go"},
		{[]string{"bench", "--kubeconfig", "/nonexistent/kubeconfig"}, "kubeconfig"},
		{[]string{"bench", "crd", "-o", "wide"}, "--output must be table or json"},
		{[]string{"bench", "crd", "--kubeconfig", "/nonexistent/kubeconfig"}, "kubeconfig"},
		{[]string{"bench", "chaos", "--watchers", "0"}, "--watchers must be positive"},
		{[]string{"bench", "chaos", "--writers", "-1"}, "--writers must be positive"},
		{[]string{"bench", "chaos", "--duration", "0s"}, "--duration and --fault-interval must be positive"},
		{[]string{"bench", "chaos", "--fault-interval", "-1s"}, "--duration and --fault-interval must be positive"},
		{[]string{"bench", "chaos", "--kite-binary", "/nonexistent/kite"}, "--kite-binary /nonexistent/kite is not an executable file"},
		{[]string{"bench", "chaos", "--kite-binary", "/etc"}, "--kite-binary /etc is not an executable file"},
	} {
		root := newRootCommand()
		root.SetOut(new(bytes.Buffer))
		root.SetErr(new(bytes.Buffer))
		root.SetArgs(tt.args)
		if err := root.ExecuteContext(t.Context()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}
