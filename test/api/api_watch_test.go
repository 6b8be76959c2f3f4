package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

func TestWatchFromListResourceVersionMissesNothing(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)
	for i := range 5 {
		if _, err := pods.Create(ctx, testPod(fmt.Sprintf("before-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 5 {
		t.Fatalf("list: %v, %d items", err, len(list.Items))
	}
	// Changes after the list, before the watch starts.
	var want []string
	for i := range 5 {
		p, err := pods.Create(ctx, testPod(fmt.Sprintf("after-%d", i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, "ADDED "+p.Name)
	}
	if err := pods.Delete(ctx, "before-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "DELETED before-0")

	for _, proto := range []bool{false, true} {
		t.Run(fmt.Sprintf("protobuf=%v", proto), func(t *testing.T) {
			cfg := config(t)
			if proto {
				cfg.ContentType = "application/vnd.kubernetes.protobuf"
				cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
			}
			c := kubernetes.NewForConfigOrDie(cfg)
			w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer w.Stop()
			var got []string
			lastRV := list.ResourceVersion
			timeout := time.After(30 * time.Second)
			for len(got) < len(want) {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatalf("watch closed after %v", got)
					}
					pod := ev.Object.(*v1.Pod)
					if pod.ResourceVersion <= lastRV && len(pod.ResourceVersion) <= len(lastRV) {
						t.Errorf("event %s %s has resourceVersion %s, not after %s", ev.Type, pod.Name, pod.ResourceVersion, lastRV)
					}
					lastRV = pod.ResourceVersion
					got = append(got, string(ev.Type)+" "+pod.Name)
				case <-timeout:
					t.Fatalf("timed out; got %v, want %v", got, want)
				}
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("events %v, want %v", got, want)
				}
			}
		})
	}
}

func TestWatchTimeoutSecondsEndsTheStream(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	timeout := int64(1)
	w, err := client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch with timeoutSeconds=1 still open after 30s")
		}
	}
}

// TestInformerSyncsWithAndWithoutWatchList runs client-go's informer, which
// starts with a streaming list (sendInitialEvents) by default, and with
// the WatchListClient feature off (a LIST then a WATCH), as
// KUBE_FEATURE_WatchListClient=false does.
func TestInformerSyncsWithAndWithoutWatchList(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("WatchListClient=%v", watchList), func(t *testing.T) {
			restore := setWatchListClient(t, watchList)
			defer restore()
			client := kubernetes.NewForConfigOrDie(config(t))
			ctx := t.Context()
			ns := newNamespace(t, client)
			for i := range 10 {
				if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod(fmt.Sprintf("p-%d", i)), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// The informer's own LISTs of pods, counted on its client:
			// the server's count also has other clients' (the namespace
			// controller lists the pods of namespaces being deleted).
			var listed atomic.Int64
			icfg := config(t)
			icfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods") && r.URL.Query().Get("watch") == "" {
						listed.Add(1)
					}
					return rt.RoundTrip(r)
				})
			})
			factory := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(icfg), 0, informers.WithNamespace(ns))
			informer := factory.Core().V1().Pods().Informer()
			var mu sync.Mutex
			seen := map[string]bool{}
			informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(obj any) {
					mu.Lock()
					seen[obj.(*v1.Pod).Name] = true
					mu.Unlock()
				},
				DeleteFunc: func(obj any) {
					if p, ok := obj.(*v1.Pod); ok {
						mu.Lock()
						delete(seen, p.Name)
						mu.Unlock()
					}
				},
			})
			stop := make(chan struct{})
			defer func() {
				close(stop)
				factory.Shutdown()
			}()
			factory.Start(stop)
			syncCtx, cancel := contextWithTimeout(t, 30*time.Second)
			defer cancel()
			if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
				t.Fatal("informer did not sync")
			}
			if n := len(informer.GetStore().List()); n != 10 {
				t.Fatalf("informer synced with %d pods, want 10", n)
			}
			// With WatchList the informer must not have fallen back to a
			// LIST (client-go does so silently when the stream fails).
			if more := listed.Load(); watchList && more != 0 {
				t.Errorf("informer made %d LIST requests with WatchListClient on, want 0 (streaming list failed?)", more)
			} else if !watchList && more == 0 {
				t.Errorf("informer made no LIST request with WatchListClient off")
			}
			if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("late"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := client.CoreV1().Pods(ns).Delete(ctx, "p-0", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "informer to see the create and the delete", func() (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				return seen["late"] && !seen["p-0"] && len(seen) == 10, nil
			})
		})
	}
}

// setWatchListClient flips client-go's WatchListClient feature for one
// test and returns the undo.
func setWatchListClient(t *testing.T, on bool) func() {
	t.Helper()
	prev := clientfeatures.FeatureGates()
	clientfeatures.ReplaceFeatureGates(fixedGates{prev: prev, watchList: on})
	return func() { clientfeatures.ReplaceFeatureGates(prev) }
}

type fixedGates struct {
	prev      clientfeatures.Gates
	watchList bool
}

func (g fixedGates) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return g.watchList
	}
	return g.prev.Enabled(f)
}

var _ = watch.Added

// roundTripFunc is a func as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
