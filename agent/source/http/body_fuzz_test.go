package http

import (
	"context"
	"errors"
	nethttp "net/http"
	"net/http/httptest"
	"sync"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/staticpod"
)

// FuzzManifestURLBody serves a good body, then the fuzzed one, from a real
// HTTP server on 127.0.0.1, and polls after each. A body the decoder
// refuses keeps the last good pods (nothing is sent, the source still holds
// the good body) and is reported once, with the decoder's reason, however
// often it is served; an accepted body sends exactly the pods the decoder
// makes of it.
func FuzzManifestURLBody(f *testing.F) {
	good := []byte(`{"apiVersion":"v1","kind":"PodList","items":[` + podJSON("a", "i1") + `]}`)
	f.Add([]byte(podJSON("web", "nginx")))
	f.Add(good)

	var (
		mu      sync.Mutex
		serving []byte
	)
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		mu.Lock()
		b := serving
		mu.Unlock()
		w.Write(b)
	}))
	f.Cleanup(srv.Close)
	serve := func(b []byte) {
		mu.Lock()
		serving = b
		mu.Unlock()
	}
	origin := staticpod.Origin{Source: kubetypes.HTTPSource, Location: srv.URL, NodeName: nodeName}
	transport := &nethttp.Transport{}
	f.Cleanup(transport.CloseIdleConnections)

	f.Fuzz(func(t *testing.T, body []byte) {
		var problems []kubetypes.Problem
		p := &poller{
			opts:   Options{URL: srv.URL, NodeName: nodeName},
			client: &nethttp.Client{Transport: transport, Timeout: DefaultTimeout},
			report: func(pr kubetypes.Problem) { problems = append(problems, pr) },
			logger: klog.Background(),
		}
		ctx := context.Background()
		serve(good)
		if _, changed := p.poll(ctx); !changed || len(problems) != 0 {
			t.Fatalf("good body: changed %v, problems %v", changed, problems)
		}

		serve(body)
		want, decodeErr := staticpod.DecodePods(body, origin)
		for i := range 2 {
			pods, changed := p.poll(ctx)
			switch {
			case string(body) == string(good):
				if changed || len(problems) != 0 {
					t.Fatalf("the same body again: changed %v, problems %v", changed, problems)
				}
			case decodeErr != nil:
				if changed || string(p.good) != string(good) {
					t.Fatalf("refused body (%v) replaced the good one: changed %v", decodeErr, changed)
				}
				reason := kubetypes.ReasonFailedToParse
				if errors.Is(decodeErr, staticpod.ErrInvalid) {
					reason = kubetypes.ReasonFailedValidation
				}
				if len(problems) != 1 || problems[0].Reason != reason {
					t.Fatalf("refused body served %d times: problems %v, want one %s", i+1, problems, reason)
				}
			case i == 0:
				if !changed || !apiequality.Semantic.DeepEqual(pods, want) || len(problems) != 0 {
					t.Fatalf("accepted body: changed %v, problems %v, pods differ from the decoder's: %v", changed, problems, !apiequality.Semantic.DeepEqual(pods, want))
				}
			default:
				if changed || len(problems) != 0 {
					t.Fatalf("accepted body served again: changed %v, problems %v", changed, problems)
				}
			}
		}
	})
}
