package server

import (
	"bytes"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

func TestReplaysFirstAttachOnlyForStdinOnceSessionsAsAsked(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *v1.Container
		opts remotecommand.Options
		want bool
	}{
		{"kubectl run -i", &v1.Container{Stdin: true, StdinOnce: true}, remotecommand.Options{Stdin: true, Stdout: true, Stderr: true}, true},
		{"kubectl run -it at a terminal", &v1.Container{Stdin: true, StdinOnce: true, TTY: true}, remotecommand.Options{Stdin: true, Stdout: true, TTY: true}, true},
		{"-it without a terminal asks for stderr: refused by the runtime", &v1.Container{Stdin: true, StdinOnce: true, TTY: true}, remotecommand.Options{Stdin: true, Stdout: true, Stderr: true, TTY: true}, false},
		{"stdin kept open for every session", &v1.Container{Stdin: true}, remotecommand.Options{Stdin: true, Stdout: true}, false},
		{"no stdin (a controller's pod)", &v1.Container{}, remotecommand.Options{Stdout: true}, false},
		{"no such container", nil, remotecommand.Options{Stdout: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := replaysFirstAttach(tc.c, tc.opts); got != tc.want {
				t.Errorf("replaysFirstAttach = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAttachedSetSaysFirstOnceAndForgetsRemovedInstances(t *testing.T) {
	var a attachedSet
	if !a.first("c1", 2, nil) {
		t.Fatal("c1's first session is not first")
	}
	if a.first("c1", 2, nil) {
		t.Fatal("c1's second session is first")
	}
	if !a.first("c2", 2, nil) {
		t.Fatal("c2's first session is not first")
	}
	// At the limit: c1 is gone from the runtime and is forgotten; c2 is
	// kept.
	listed := 0
	live := func() map[string]bool { listed++; return map[string]bool{"c2": true, "c3": true} }
	if !a.first("c3", 2, live) || listed != 1 {
		t.Fatalf("c3: first with %d listings, want 1", listed)
	}
	if a.first("c2", 2, live) {
		t.Error("c2 forgotten while the runtime still has it")
	}
	if _, ok := a.ids["c1"]; ok {
		t.Error("c1 remembered after the runtime removed it")
	}
}

func TestSkipWriterPassesOnOnlyWhatFollowsTheSkip(t *testing.T) {
	for _, tc := range []struct {
		skip   int64
		writes []string
		want   string
	}{
		{0, []string{"ab", "cd"}, "abcd"},
		{3, []string{"ab", "cd", "e"}, "de"},
		{4, []string{"ab", "cd"}, ""},
		{10, []string{"ab"}, ""},
	} {
		t.Run(fmt.Sprint(tc.skip, tc.writes), func(t *testing.T) {
			var b bytes.Buffer
			w := &skipWriter{w: &b, skip: tc.skip}
			var total int64
			for _, s := range tc.writes {
				n, err := w.Write([]byte(s))
				if err != nil || n != len(s) {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
				total += int64(n)
			}
			if b.String() != tc.want || w.n != total {
				t.Errorf("passed %q, counted %d; want %q, %d", b.String(), w.n, tc.want, total)
			}
		})
	}
}

func TestCRLFWriterRestoresCarriageReturns(t *testing.T) {
	var b bytes.Buffer
	n, err := crlfWriter{w: &b}.Write([]byte("a\nb\n"))
	if err != nil || n != 4 || b.String() != "a\r\nb\r\n" {
		t.Errorf("wrote %q (%d, %v), want %q", b.String(), n, err, "a\r\nb\r\n")
	}
}
