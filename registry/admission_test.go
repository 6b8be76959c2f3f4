package registry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// recorder is an admission chain that writes down what each phase saw,
// and may mutate or refuse.
type recorder struct {
	seen   []string
	mutate func(a admission.Attributes)
	refuse error // from Validate
}

func (r *recorder) Admit(_ context.Context, a admission.Attributes) error {
	r.seen = append(r.seen, "admit "+describe(a))
	if r.mutate != nil {
		r.mutate(a)
	}
	return nil
}

func (r *recorder) Validate(_ context.Context, a admission.Attributes) error {
	r.seen = append(r.seen, "validate "+describe(a))
	return r.refuse
}

// describe is what a test compares: the operation, the resource, the
// kinds of the objects, the deployment's replicas and whether it has a
// uid and a name yet, and dry-run.
func describe(a admission.Attributes) string {
	obj := func(o runtime.Object) string {
		switch o := o.(type) {
		case nil:
			return "-"
		case *appsv1.Deployment:
			r := "nil"
			if o.Spec.Replicas != nil {
				r = fmt.Sprint(*o.Spec.Replicas)
			}
			return fmt.Sprintf("Deployment(replicas=%s uid=%v name=%v)", r, o.UID != "", o.Name != "")
		case *autoscalingv1.Scale:
			return fmt.Sprintf("Scale(replicas=%d)", o.Spec.Replicas)
		}
		return fmt.Sprintf("%T", o)
	}
	res := a.GetResource().Resource
	if a.GetSubresource() != "" {
		res += "/" + a.GetSubresource()
	}
	return fmt.Sprintf("%s %s %s %s %s dryRun=%v", a.GetOperation(), res, a.GetKind().Kind, obj(a.GetObject()), obj(a.GetOldObject()), a.IsDryRun())
}

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": "d"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	d.Spec.Template.Labels = labels
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1Container)
	if name == "" {
		d.GenerateName = "gen-"
	}
	return d
}

// TestAdmissionRunsInUpstreamsOrder: mutating admission sees the
// defaulted object before the server's fields (no uid, no generated
// name), what it removes is defaulted again, validating admission sees
// the object as it is stored; deletes are admitted without objects and
// validated with the old one; a Scale is admitted as a Scale.
func TestAdmissionRunsInUpstreamsOrder(t *testing.T) {
	_, client := etcdtest.Start(t)
	rec := &recorder{}
	s := newStoreWith(t, client, builtin.Deployments(), rec)
	ctx := t.Context()
	// Mutating admission takes replicas away: defaulting puts 1 back.
	rec.mutate = func(a admission.Attributes) {
		if d, ok := a.GetObject().(*appsv1.Deployment); ok {
			d.Spec.Replicas = nil
		}
	}
	tests := []struct {
		name string
		do   func() error
		want []string
	}{
		{"create with generateName", func() error {
			_, err := s.Create(ctx, "ns", deployment(""), &metav1.CreateOptions{})
			return err
		}, []string{
			"admit CREATE deployments Deployment Deployment(replicas=1 uid=false name=false) - dryRun=false",
			"validate CREATE deployments Deployment Deployment(replicas=1 uid=true name=true) - dryRun=false",
		}},
		{"dry-run create", func() error {
			_, err := s.Create(ctx, "ns", deployment("d"), &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, []string{
			"admit CREATE deployments Deployment Deployment(replicas=1 uid=false name=true) - dryRun=true",
			"validate CREATE deployments Deployment Deployment(replicas=1 uid=true name=true) - dryRun=true",
		}},
		{"create", func() error {
			_, err := s.Create(ctx, "ns", deployment("d"), &metav1.CreateOptions{})
			return err
		}, []string{
			"admit CREATE deployments Deployment Deployment(replicas=1 uid=false name=true) - dryRun=false",
			"validate CREATE deployments Deployment Deployment(replicas=1 uid=true name=true) - dryRun=false",
		}},
		{"update", func() error {
			_, _, err := s.Update(ctx, &registry.UpdateRequest{Namespace: "ns", Name: "d", Object: func(_ context.Context, old runtime.Object) (runtime.Object, error) {
				d := old.(*appsv1.Deployment)
				d.Spec.Replicas = new(int32(3))
				return d, nil
			}})
			return err
		}, []string{
			"admit UPDATE deployments Deployment Deployment(replicas=3 uid=true name=true) Deployment(replicas=1 uid=true name=true) dryRun=false",
			"validate UPDATE deployments Deployment Deployment(replicas=1 uid=true name=true) Deployment(replicas=1 uid=true name=true) dryRun=false",
		}},
		{"scale", func() error {
			_, _, err := s.Update(ctx, &registry.UpdateRequest{Namespace: "ns", Name: "d", Subresource: "scale", Object: func(_ context.Context, old runtime.Object) (runtime.Object, error) {
				sc := old.(*autoscalingv1.Scale)
				sc.Spec.Replicas = 4
				return sc, nil
			}})
			return err
		}, []string{
			"admit UPDATE deployments/scale Scale Scale(replicas=4) Scale(replicas=1) dryRun=false",
			"validate UPDATE deployments/scale Scale Scale(replicas=4) Scale(replicas=1) dryRun=false",
		}},
		{"delete", func() error {
			_, _, err := s.Delete(ctx, "ns", "d", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, []string{
			"admit DELETE deployments Deployment - - dryRun=true",
			"validate DELETE deployments Deployment - Deployment(replicas=4 uid=true name=true) dryRun=true",
		}},
		{"deletecollection", func() error {
			_, err := s.DeleteCollection(ctx, "ns", &metainternalversion.ListOptions{}, &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, []string{
			"admit DELETE deployments Deployment - - dryRun=true",
			"validate DELETE deployments Deployment - Deployment(replicas=4 uid=true name=true) dryRun=true",
			"validate DELETE deployments Deployment - Deployment(replicas=1 uid=true name=true) dryRun=true",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec.seen = nil
			if err := tt.do(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(rec.seen, "\n"); got != strings.Join(tt.want, "\n") {
				t.Errorf("admission saw\n%s\nwant\n%s", got, strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestValidatingAdmissionRefusalWritesNothing: a refusal of validating
// admission stops create, update and delete before storage; an API
// status error goes to the client as it is, any other error as a 403
// naming the object.
func TestValidatingAdmissionRefusalWritesNothing(t *testing.T) {
	_, client := etcdtest.Start(t)
	rec := &recorder{}
	s := newStoreWith(t, client, builtin.Deployments(), rec)
	ctx := t.Context()
	if _, err := s.Create(ctx, "ns", deployment("kept"), &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		refuse error
		check  func(error) bool
	}{
		{"api status error as it is", apierrors.NewConflict(appsv1.Resource("deployments"), "x", errors.New("no")), apierrors.IsConflict},
		{"plain error as 403", errors.New("no"), func(err error) bool {
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), `deployments.apps "`) && strings.Contains(err.Error(), "no")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec.refuse = tt.refuse
			defer func() { rec.refuse = nil }()
			if _, err := s.Create(ctx, "ns", deployment("new"), &metav1.CreateOptions{}); !tt.check(err) {
				t.Errorf("create: %v", err)
			}
			_, _, err := s.Update(ctx, &registry.UpdateRequest{Namespace: "ns", Name: "kept", Object: func(_ context.Context, old runtime.Object) (runtime.Object, error) {
				d := old.(*appsv1.Deployment)
				d.Labels = map[string]string{"changed": "yes"}
				return d, nil
			}})
			if !tt.check(err) {
				t.Errorf("update: %v", err)
			}
			if _, _, err := s.Delete(ctx, "ns", "kept", nil); !tt.check(err) {
				t.Errorf("delete: %v", err)
			}
		})
	}
	if _, err := s.Get(ctx, "ns", "new", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused create stored the object: %v", err)
	}
	kept, err := s.Get(ctx, "ns", "kept", &metav1.GetOptions{})
	if err != nil {
		t.Fatalf("refused delete deleted the object: %v", err)
	}
	if m, _ := meta.Accessor(kept); m.GetLabels()["changed"] != "" {
		t.Errorf("refused update wrote: labels %v", m.GetLabels())
	}
}

var corev1Container = corev1.Container{Name: "c", Image: "busybox:1.36"}
