package watchcache

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/storage/intern"
)

func TestCachedObjectsShareWhatTheyHaveInCommon(t *testing.T) {
	var hooked atomic.Int64
	ctx, c, _ := testSetup(t, withOptions(func(o *Options) {
		o.Intern = func(t *intern.Table, obj runtime.Object) {
			hooked.Add(1)
			pod := obj.(*example.Pod)
			pod.Spec.NodeSelector = t.Map(pod.Spec.NodeSelector)
		}
	}))
	for i := range 3 {
		pod := &example.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"app": "web"}},
			Spec:       example.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}},
		}
		if err := c.Create(ctx, podKey(pod.Name), pod, &example.Pod{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	list := &example.PodList{}
	if err := c.GetList(ctx, "/pods/ns", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("got %d pods, want 3", len(list.Items))
	}
	ptr := func(m map[string]string) uintptr { return uintptr(reflect.ValueOf(m).UnsafePointer()) }
	for _, p := range list.Items[1:] {
		if ptr(p.Labels) != ptr(list.Items[0].Labels) {
			t.Errorf("%s: labels not shared with %s", p.Name, list.Items[0].Name)
		}
		if ptr(p.Spec.NodeSelector) != ptr(list.Items[0].Spec.NodeSelector) {
			t.Errorf("%s: the resource's Intern hook did not share its node selector", p.Name)
		}
	}
	if n := hooked.Load(); n != 3 {
		t.Errorf("Intern hook ran %d times, want once per object taken in (3)", n)
	}
}
