// Package replication keeps each ReplicationController's pods: the job of
// kube-controller-manager's replication manager. As upstream's, it is the
// ReplicaSet controller's logic run over ReplicationControllers seen as
// ReplicaSets: this package is only the adapter (a ListerWatcher that
// converts ReplicationControllers into ReplicaSets, and the status write
// that converts back), so both kinds get the same creations, deletions,
// adoptions and status.
package replication

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/replicaset"
	"github.com/kite-project/kite/listwatch"
)

// Options configure a Controller: the ReplicaSet controller's.
type Options = replicaset.Options

// Controller is the replication manager. Run drives it.
type Controller = replicaset.Controller

// New returns a Controller of ReplicationControllers.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("replicationcontroller controller: Client is required")
	}
	rcs := opts.Client.CoreV1().ReplicationControllers
	return replicaset.NewFor(opts, replicaset.Kind{
		Name: "replicationcontroller-controller", GVK: corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		// Its own cache: the objects are ReplicaSets converted from
		// ReplicationControllers, which no other controller shares.
		Shape:         informer.Shape{Resource: "replicationcontrollers"},
		ListerWatcher: converting{listwatch.FromTypedClient(rcs(""), nil)},
		Get: func(ctx context.Context, namespace, name string) (metav1.Object, error) {
			return rcs(namespace).Get(ctx, name, metav1.GetOptions{})
		},
		UpdateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) error {
			_, err := rcs(rs.Namespace).UpdateStatus(ctx, FromReplicaSet(rs), metav1.UpdateOptions{})
			return err
		},
	})
}

// ToReplicaSet is upstream's conversion of a ReplicationController into a
// ReplicaSet: the same metadata, replicas, minReadySeconds and template,
// the selector map as matchLabels, the status counts and conditions.
func ToReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: *rc.ObjectMeta.DeepCopy(),
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: rc.Spec.Selector},
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas: rc.Status.Replicas, FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas: rc.Status.ReadyReplicas, AvailableReplicas: rc.Status.AvailableReplicas,
			ObservedGeneration: rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template.DeepCopy()
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return rs
}

// FromReplicaSet converts back what ToReplicaSet made (terminatingReplicas,
// which ReplicationControllers do not have, is dropped).
func FromReplicaSet(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		ObjectMeta: *rs.ObjectMeta.DeepCopy(),
		Spec: corev1.ReplicationControllerSpec{
			Replicas: rs.Spec.Replicas, MinReadySeconds: rs.Spec.MinReadySeconds,
			Template: rs.Spec.Template.DeepCopy(),
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas: rs.Status.Replicas, FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas: rs.Status.ReadyReplicas, AvailableReplicas: rs.Status.AvailableReplicas,
			ObservedGeneration: rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = rs.Spec.Selector.MatchLabels
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{Type: corev1.ReplicationControllerConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return rc
}

// converting lists and watches ReplicationControllers as ReplicaSets.
type converting struct{ inner listwatch.ListerWatcher }

func (c converting) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := c.inner.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	l, ok := obj.(*corev1.ReplicationControllerList)
	if !ok {
		return nil, fmt.Errorf("list of replicationcontrollers: got %T", obj)
	}
	out := &appsv1.ReplicaSetList{ListMeta: l.ListMeta}
	for i := range l.Items {
		out.Items = append(out.Items, *ToReplicaSet(&l.Items[i]))
	}
	return out, nil
}

func (c converting) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := c.inner.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	cw := &convertingWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go cw.loop()
	return cw, nil
}

// convertingWatch passes on a watch's events with ReplicationControllers
// made ReplicaSets. Its goroutine ends when the inner watch ends or Stop
// is called, even with an event nobody reads (apimachinery's
// watch.Filter would stay blocked on it).
type convertingWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func (w *convertingWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *convertingWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

func (w *convertingWatch) loop() {
	defer close(w.out)
	for {
		select {
		case e, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			if rc, ok := e.Object.(*corev1.ReplicationController); ok {
				e.Object = ToReplicaSet(rc)
			}
			select {
			case w.out <- e:
			case <-w.stop:
				return
			}
		case <-w.stop:
			return
		}
	}
}
