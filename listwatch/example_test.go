package listwatch_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/listwatch"
)

// The node agent's API source: watch this node's pods and get the whole
// set after every change.
func Example_nodePods() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:6443"})
	if err != nil {
		panic(err)
	}
	pods := make(chan []*v1.Pod, 1)
	store := listwatch.NewUndeltaStore(listwatch.UndeltaOptions[*v1.Pod]{
		Push: func(snapshot []*v1.Pod) { pods <- snapshot },
	})
	r, err := listwatch.NewReflector(listwatch.Options{
		Name: "pods on node-1",
		ListerWatcher: listwatch.FromRESTClient(cs.CoreV1().RESTClient(), "pods", "",
			fields.OneTermEqualSelector("spec.nodeName", "node-1")),
		Store:          store,
		ExpectedType:   &v1.Pod{},
		RefusedMaxWait: time.Second, // back within a second of the API server's return
	})
	if err != nil {
		panic(err)
	}
	go r.Run(ctx)
	for snapshot := range pods {
		fmt.Println(len(snapshot), "pods")
	}
}

// An indexed cache of every pod, read by node once the first list is in.
func ExampleIndexer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:6443"})
	if err != nil {
		panic(err)
	}
	byNode := listwatch.NewIndexer(listwatch.IndexerOptions[*v1.Pod]{
		Indexers: map[string]listwatch.IndexFunc[*v1.Pod]{
			"spec.nodeName": func(p *v1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil },
		},
	})
	r, err := listwatch.NewReflector(listwatch.Options{
		Name:          "pods",
		ListerWatcher: listwatch.FromTypedClient(cs.CoreV1().Pods(""), nil),
		Store:         byNode,
		ExpectedType:  &v1.Pod{},
	})
	if err != nil {
		panic(err)
	}
	go r.Run(ctx)
	<-r.Synced()
	onNode1, _ := byNode.ByIndex("spec.nodeName", "node-1")
	fmt.Println(len(onNode1), "pods on node-1 at resourceVersion", r.LastSyncResourceVersion())
}
