package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestBenchClusterFlagMistakes(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "cluster", "-o", "wide"}, "--output must be table or json"},
		{[]string{"bench", "cluster", "--pods", "-1"}, "--pods must not be negative"},
		{[]string{"bench", "cluster", "--execs", "-2"}, "--execs must not be negative"},
		{[]string{"bench", "cluster", "--log-reads", "-1"}, "--log-reads must not be negative"},
		{[]string{"bench", "cluster", "--log-bytes", "99"}, "--log-bytes must be at least one 100-byte line"},
		{[]string{"bench", "cluster", "--timeout", "-1s"}, "--timeout not negative"},
		{[]string{"bench", "cluster", "--kubeconfig", "/nonexistent/kubeconfig"}, "kubeconfig"},
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
