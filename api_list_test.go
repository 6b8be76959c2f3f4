package kite_test

import (
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestPaginationUnderConcurrentWritesReturnsEachObjectOnce pages through
// pods with limit/continue while other pods are created and updated:
// every pod that existed before the first page appears exactly once, and
// all pages come from the first page's resourceVersion.
func TestPaginationUnderConcurrentWritesReturnsEachObjectOnce(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)
	const n = 60
	before := map[string]bool{}
	for i := range n {
		p, err := pods.Create(ctx, testPod(fmt.Sprintf("p-%03d", i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before[p.Name] = true
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	startWriter := func() {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				pods.Create(ctx, testPod(fmt.Sprintf("new-%04d", i)), metav1.CreateOptions{})
				if p, err := pods.Get(ctx, fmt.Sprintf("p-%03d", i%n), metav1.GetOptions{}); err == nil {
					p.Labels["round"] = fmt.Sprint(i)
					pods.Update(ctx, p, metav1.UpdateOptions{})
				}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	seen := map[string]int{}
	opts := metav1.ListOptions{Limit: 7}
	var firstRV string
	pages := 0
	for {
		page, err := pods.List(ctx, opts)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		if firstRV == "" {
			firstRV = page.ResourceVersion
			if page.RemainingItemCount == nil || *page.RemainingItemCount != n-7 {
				t.Errorf("first page remainingItemCount %v, want %d", page.RemainingItemCount, n-7)
			}
		} else if page.ResourceVersion != firstRV {
			t.Errorf("page %d at resourceVersion %s, first at %s", pages, page.ResourceVersion, firstRV)
		}
		for _, p := range page.Items {
			seen[p.Name]++
		}
		if pages == 1 {
			// Write while the later pages are read.
			startWriter()
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	if len(seen) != n {
		t.Errorf("pages returned %d distinct pods, want %d (the ones before the first page)", len(seen), n)
	}
	for name, count := range seen {
		if !before[name] || count != 1 {
			t.Errorf("pod %s seen %d times (existed before: %v)", name, count, before[name])
		}
	}
	if pages != (n+6)/7 {
		t.Errorf("%d pages, want %d", pages, (n+6)/7)
	}
}

func TestPodFieldSelectors(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)
	a := testPod("a")
	a.Spec.NodeName = "node-a"
	a.Spec.RestartPolicy = v1.RestartPolicyNever
	a.Spec.HostNetwork = true
	b := testPod("b")
	b.Spec.SchedulerName = "other"
	for _, p := range []*v1.Pod{a, b} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		selector string
		want     string
	}{
		{"metadata.name=a", "a"},
		{"metadata.namespace=" + ns + ",metadata.name=b", "b"},
		{"spec.nodeName=node-a", "a"},
		{"spec.nodeName=", "b"},
		{"spec.restartPolicy=Never", "a"},
		{"spec.schedulerName=other", "b"},
		{"spec.serviceAccountName=default,metadata.name=b", "b"},
		{"spec.hostNetwork=true", "a"},
		{"status.phase=Pending,metadata.name!=a", "b"},
		{"status.podIP=", "a,b"},
		{"status.nominatedNodeName=x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: tt.selector})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for i, p := range list.Items {
				if i > 0 {
					got += ","
				}
				got += p.Name
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
