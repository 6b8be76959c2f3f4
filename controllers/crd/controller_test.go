package crd_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

// kite.Start always runs this package's Controller.
func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { srv = s }) }

func widgets(group, plural, kind string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}

func poll(t *testing.T, ctx context.Context, what string, done func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 20*time.Second, true, done); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// CRDs of one group that all ask for one kind, created at once: exactly
// one accepts it and is Established, the others are NamesAccepted=False
// and not Established, however the writes interleave. Once the winner is
// deleted, its kind is free and another takes it.
func TestOneOfCRDsCreatedTogetherTakesAKind(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	client := apiextensionsclient.NewForConfigOrDie(srv.RESTConfig()).CustomResourceDefinitions()
	const n = 6
	group := fmt.Sprintf("race-%d.example.com", time.Now().UnixNano()) // -count=N runs anew
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := client.Create(ctx, widgets(group, fmt.Sprintf("racers%d", i), "Racer", apiextensionsv1.ClusterScoped), metav1.CreateOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	decided := func(ctx context.Context) (accepted []string, refused int, err error) {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, 0, err
		}
		for _, crd := range list.Items {
			if crd.Spec.Group != group || crd.DeletionTimestamp != nil {
				continue
			}
			switch c := apihelpers.FindCRDCondition(&crd, apiextensionsv1.NamesAccepted); {
			case c == nil:
			case c.Status == apiextensionsv1.ConditionTrue:
				accepted = append(accepted, crd.Name)
				if !apihelpers.IsCRDConditionTrue(&crd, apiextensionsv1.Established) {
					return nil, 0, nil // not yet
				}
			case c.Status == apiextensionsv1.ConditionFalse:
				if apihelpers.IsCRDConditionTrue(&crd, apiextensionsv1.Established) || crd.Status.AcceptedNames.Kind == "Racer" {
					t.Errorf("%s refused its names but Established or accepted the kind: %+v", crd.Name, crd.Status)
				}
				refused++
			}
		}
		return accepted, refused, nil
	}
	var winner string
	poll(t, ctx, "every CRD decided", func(ctx context.Context) (bool, error) {
		accepted, refused, err := decided(ctx)
		if len(accepted) > 1 {
			t.Fatalf("%d CRDs accepted the kind Racer: %v", len(accepted), accepted)
		}
		if len(accepted) == 1 {
			winner = accepted[0]
		}
		return len(accepted)+refused == n, err
	})
	// Let a late write show itself before the deletion.
	time.Sleep(100 * time.Millisecond)
	if accepted, _, err := decided(ctx); err != nil || len(accepted) != 1 || accepted[0] != winner {
		t.Fatalf("accepted %v (%v), want only %s", accepted, err, winner)
	}

	if err := client.Delete(ctx, winner, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "another CRD takes the freed kind", func(ctx context.Context) (bool, error) {
		accepted, _, err := decided(ctx)
		if len(accepted) > 1 {
			t.Fatalf("%d CRDs accepted the kind Racer: %v", len(accepted), accepted)
		}
		return len(accepted) == 1 && accepted[0] != winner, err
	})
	for i := range n {
		client.Delete(ctx, fmt.Sprintf("racers%d.%s", i, group), metav1.DeleteOptions{})
	}
}

// Deleting a CRD deletes its custom resources in every namespace (and
// cluster-scoped ones), conditions the CRD as upstream on the way, and
// removes it only once its resource is no longer served.
func TestDeletedCRDGoesAfterItsCustomResources(t *testing.T) {
	for _, scope := range []apiextensionsv1.ResourceScope{apiextensionsv1.NamespaceScoped, apiextensionsv1.ClusterScoped} {
		t.Run(string(scope), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			client := apiextensionsclient.NewForConfigOrDie(srv.RESTConfig()).CustomResourceDefinitions()
			group := "cleanup-" + map[apiextensionsv1.ResourceScope]string{apiextensionsv1.NamespaceScoped: "ns", apiextensionsv1.ClusterScoped: "cluster"}[scope] + ".example.com"
			crd := widgets(group, "gadgets", "Gadget", scope)
			if _, err := client.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
			dyn := dynamic.NewForConfigOrDie(srv.RESTConfig()).Resource(gvr)
			namespaces := []string{""}
			if scope == apiextensionsv1.NamespaceScoped {
				namespaces = []string{"default", "cleanup-other"}
				cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
				if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cleanup-other"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
			for _, ns := range namespaces {
				for i := range 3 {
					obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": fmt.Sprintf("g%d", i)}}}
					r := dynamic.ResourceInterface(dyn)
					if ns != "" {
						r = dyn.Namespace(ns)
					}
					poll(t, ctx, "custom resource created", func(ctx context.Context) (bool, error) {
						_, err := r.Create(ctx, obj, metav1.CreateOptions{})
						return err == nil, nil
					})
				}
			}
			w, err := client.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + crd.Name})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if err := client.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			var reasons []string
			for ev := range w.ResultChan() {
				c, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
				if !ok {
					t.Fatalf("watch: %v", ev.Object)
				}
				if cond := apihelpers.FindCRDCondition(c, apiextensionsv1.Terminating); cond != nil && (len(reasons) == 0 || reasons[len(reasons)-1] != cond.Reason) {
					reasons = append(reasons, cond.Reason)
				}
				if ev.Type == "DELETED" {
					break
				}
			}
			if want := []string{"InstanceDeletionPending", "InstanceDeletionInProgress", "InstanceDeletionCompleted"}; fmt.Sprint(reasons) != fmt.Sprint(want) {
				t.Errorf("Terminating reasons %v, want %v", reasons, want)
			}
			if _, err := dyn.List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("list custom resources once the CRD is gone: %v, want 404", err)
			}
			got, err := srv.EtcdClient().Get(ctx, "/registry/"+group+"/gadgets/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
			if err != nil || len(got.Kvs) != 0 {
				t.Errorf("custom resources left in etcd: %v %v", got, err)
			}
		})
	}
}
