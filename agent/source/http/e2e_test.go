package http

import (
	"context"
	nethttp "net/http"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/config"
	"github.com/kite-project/kite/agent/kubetypes"
)

// TestEndToEndURLThroughMerge: a real server on 127.0.0.1, the real source
// and the real merge. A URL that fails for many polls removes nothing; a
// content change comes through on the next poll; unchanged content gives
// nothing.
func TestEndToEndURLThroughMerge(t *testing.T) {
	srv := newServer(t, body(`{"apiVersion":"v1","kind":"PodList","items":[`+podJSON("a", "v1")+`,`+podJSON("b", "v1")+`]}`))
	rec := &recorder{}
	src, err := New(Options{URL: srv.URL, NodeName: nodeName, CheckFrequency: poll, Reporter: rec})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := config.New(config.Options{Sources: []string{kubetypes.HTTPSource}})
	if err != nil {
		t.Fatal(err)
	}
	_, logCtx := ktesting.NewTestContext(t) // logs go to the test's output
	ctx, cancel := context.WithCancel(logCtx)
	done := make(chan struct{}, 2)
	go func() { pc.Run(ctx); done <- struct{}{} }()
	go func() { src.Run(ctx, pc.Input()); done <- struct{}{} }()
	defer func() {
		cancel()
		<-done
		<-done
	}()
	ops := pc.Updates()
	nextOp := func() string {
		t.Helper()
		select {
		case u := <-ops:
			return u.Op.String() + " " + names(u.Pods)
		case <-time.After(waitTimeout):
			t.Fatal("no operation")
		}
		return ""
	}
	// noOpFor: n more requests served and no operation meanwhile. Once the
	// merge has an update it sends it before taking the next one, and the
	// source sends before polling again, so two requests bound it.
	noOpFor := func(n int) {
		t.Helper()
		drainRequests(srv)
		deadline := time.After(waitTimeout)
		for seen := 0; seen < n; {
			select {
			case u := <-ops:
				t.Fatalf("unexpected %s %s", u.Op, names(u.Pods))
			case <-srv.requests:
				seen++
			case <-deadline:
				t.Fatalf("only %d of %d requests", seen, n)
			}
		}
	}

	if got := nextOp(); got != "ADD default/a-node1:v1,default/b-node1:v1" {
		t.Fatalf("first: %q", got)
	}
	noOpFor(3)

	srv.set(status(nethttp.StatusInternalServerError))
	noOpFor(50) // a long outage, in polls
	if p := rec.list(); len(p) != 1 {
		t.Fatalf("problems %v, want the outage reported once", p)
	}

	srv.set(body(`{"apiVersion":"v1","kind":"PodList","items":[` + podJSON("a", "v1") + `,` + podJSON("b", "v2") + `]}`))
	if got := nextOp(); got != "REMOVE default/b-node1:v1" {
		t.Fatalf("after change: %q", got)
	}
	if got := nextOp(); got != "ADD default/b-node1:v2" {
		t.Fatalf("after change: %q", got)
	}
	noOpFor(3)
}
