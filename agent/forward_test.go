package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/kubetypes"
)

func apiPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
}

func mirrorOf(name string) *v1.Pod {
	p := apiPod(name)
	p.Annotations = map[string]string{kubetypes.ConfigMirrorAnnotationKey: "hash-" + name}
	return p
}

func update(op kubetypes.Op, source string, pods ...*v1.Pod) kubetypes.PodUpdate {
	return kubetypes.PodUpdate{Op: op, Source: source, Pods: pods}
}

// The consumer never sees mirror pods; a source's first report still
// reaches it, as an empty ADD when it held mirror pods only.
func TestForConsumerKeepsMirrorPodsOut(t *testing.T) {
	tests := []struct {
		name string
		in   []kubetypes.PodUpdate
		want []string // describe() of what is sent
	}{
		{
			name: "API pods pass",
			in:   []kubetypes.PodUpdate{update(kubetypes.ADD, kubetypes.APISource, apiPod("a"), apiPod("b"))},
			want: []string{"ADD api default/a,default/b"},
		},
		{
			name: "mirror pods are taken out of mixed updates",
			in: []kubetypes.PodUpdate{
				update(kubetypes.ADD, kubetypes.APISource, apiPod("a"), mirrorOf("s")),
				update(kubetypes.REMOVE, kubetypes.APISource, mirrorOf("s"), apiPod("a")),
			},
			want: []string{"ADD api default/a", "REMOVE api default/a"},
		},
		{
			name: "a first report of mirror pods only becomes an empty ADD",
			in: []kubetypes.PodUpdate{
				update(kubetypes.ADD, kubetypes.APISource, mirrorOf("s")),
				update(kubetypes.ADD, kubetypes.APISource, mirrorOf("t")),
				update(kubetypes.DELETE, kubetypes.APISource, mirrorOf("s")),
				update(kubetypes.REMOVE, kubetypes.APISource, mirrorOf("s")),
			},
			want: []string{"ADD api "},
		},
		{
			name: "an empty first report passes",
			in:   []kubetypes.PodUpdate{update(kubetypes.ADD, kubetypes.APISource)},
			want: []string{"ADD api "},
		},
		{
			name: "static pods pass, mirror annotation or not",
			in:   []kubetypes.PodUpdate{update(kubetypes.ADD, kubetypes.FileSource, apiPod("s-node"))},
			want: []string{"ADD file default/s-node"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &Agent{announced: map[string]bool{}}
			got := []string{}
			for _, u := range tc.in {
				if out, send := a.forConsumer(u); send {
					got = append(got, describe(out))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("sent %q, want %q", got, tc.want)
			}
		})
	}
}

// The view follows static pods (file, http) and mirror pods (api, by
// annotation) through the operations, and ignores other API pods.
func TestViewFollowsStaticAndMirrorPods(t *testing.T) {
	v := newView()
	steps := []struct {
		u                      kubetypes.PodUpdate
		changed                bool
		wantStatic, wantMirror []string
	}{
		{update(kubetypes.ADD, kubetypes.APISource), false, nil, nil},
		{update(kubetypes.ADD, kubetypes.APISource, apiPod("a")), false, nil, nil},
		{update(kubetypes.ADD, kubetypes.FileSource, apiPod("s")), true, []string{"s"}, nil},
		{update(kubetypes.ADD, kubetypes.APISource, mirrorOf("s")), true, []string{"s"}, []string{"s"}},
		{update(kubetypes.DELETE, kubetypes.APISource, mirrorOf("s")), true, []string{"s"}, []string{"s"}},
		{update(kubetypes.REMOVE, kubetypes.APISource, mirrorOf("s")), true, []string{"s"}, nil},
		{update(kubetypes.ADD, kubetypes.HTTPSource, apiPod("h")), true, []string{"h", "s"}, nil},
		{update(kubetypes.REMOVE, kubetypes.FileSource, apiPod("s")), true, []string{"h"}, nil},
	}
	names := func(pods []*v1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	for i, s := range steps {
		if got := v.apply(s.u); got != s.changed {
			t.Errorf("step %d (%s): changed = %v, want %v", i, describe(s.u), got, s.changed)
		}
		if got := names(v.staticPods()); !slices.Equal(got, s.wantStatic) {
			t.Errorf("step %d (%s): static %v, want %v", i, describe(s.u), got, s.wantStatic)
		}
		if got := names(v.mirrorPods()); !slices.Equal(got, s.wantMirror) {
			t.Errorf("step %d (%s): mirrors %v, want %v", i, describe(s.u), got, s.wantMirror)
		}
	}
}

// TestEachOperationIsLoggedOnce: the agent logs every operation it
// passes on in one line ("Pod operation", op, source, pods), whichever
// sync loop consumes it, and an agent that runs no pods (LogSyncLoop)
// logs nothing more.
func TestEachOperationIsLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "solo.yaml"), manifest("solo", "image"))
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	a, err := New(Options{NodeName: "log-node", StaticPodPath: dir, SyncLoop: LogSyncLoop{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	buffer := logger.GetSink().(ktesting.Underlier).GetBuffer()
	operations := func() []string {
		var out []string
		for _, e := range buffer.Data() {
			if e.Message == "Pod operation" {
				out = append(out, fmt.Sprint(e.ParameterKVList...))
			}
		}
		return out
	}
	deadline := time.Now().Add(waitTimeout)
	for len(operations()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling, not synchronisation
	}
	time.Sleep(200 * time.Millisecond) // a second line would come now
	cancel()
	wg.Wait()
	want := []string{fmt.Sprint("op", "ADD", "source", "file", "pods", []string{"solo-log-node_default"})}
	if got := operations(); !slices.Equal(got, want) {
		t.Errorf("logged operations %q, want %q", got, want)
	}
}
