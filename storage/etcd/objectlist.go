package etcd

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ObjectList is a list that GetList fills with separate objects of the
// store's kind (Options.NewFunc), each decoded into its own allocation.
// A typed list's items share one array, which whoever keeps the objects
// must copy them out of (or pin whole); a watch cache's first list of
// 100 000 pods spent a third of its time on that array and the copies.
// It is for callers inside the process, never encoded.
type ObjectList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
}

var _ metav1.ListInterface = (*ObjectList)(nil)

// DeepCopyObject implements runtime.Object.
func (l *ObjectList) DeepCopyObject() runtime.Object {
	out := &ObjectList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]runtime.Object, len(l.Items))
		for i, obj := range l.Items {
			out.Items[i] = obj.DeepCopyObject()
		}
	}
	return out
}

// FillsObjectLists reports that GetList fills an ObjectList, for callers
// that hold a storage.Interface.
func (s *Store) FillsObjectLists() bool { return true }
