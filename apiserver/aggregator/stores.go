package aggregator

import (
	"context"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/webhook"
)

// storeServices reads Services and EndpointSlices from the server's own
// stores (their watch caches), and resolves a Service as the webhooks'
// resolver does: to a ready endpoint, so that an extension server in a
// pod is reached without a service proxy on the API server's host (as
// kube-apiserver's --enable-aggregator-routing), else the ExternalName
// or the clusterIP.
type storeServices struct {
	stores   webhook.Stores
	resolver *webhook.ServiceResolver
}

func newStoreServices(stores webhook.Stores) *storeServices {
	return &storeServices{stores: stores, resolver: &webhook.ServiceResolver{Stores: stores}}
}

func (s *storeServices) store(resource string) (*registry.Store, error) {
	st := s.stores(resource)
	if st == nil {
		return nil, fmt.Errorf("%s are not served", resource)
	}
	return st, nil
}

func (s *storeServices) Service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	st, err := s.store("services")
	if err != nil {
		return nil, err
	}
	obj, err := st.Get(ctx, namespace, name, &metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Service), nil
}

func (s *storeServices) EndpointSlices(ctx context.Context, namespace, name string) ([]discoveryv1.EndpointSlice, error) {
	st, err := s.store("endpointslices.discovery.k8s.io")
	if err != nil {
		return nil, err
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
	list, err := st.List(ctx, namespace, &metainternalversion.ListOptions{ResourceVersion: "0", LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.(*discoveryv1.EndpointSliceList).Items, nil
}

func (s *storeServices) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return s.resolver.ResolveEndpoint(namespace, name, port)
}

// aggregatorUser is who writes the APIServices' conditions, as upstream's
// availability controller runs in kube-apiserver with its loopback
// identity.
var aggregatorUser = &user.DefaultInfo{Name: "system:kube-aggregator", Groups: []string{user.SystemPrivilegedGroup}}

// updateStatus sets the Available condition of svc on the stored
// APIService (the same object: same UID), through the store, as a status
// update.
func updateStatus(ctx context.Context, stores webhook.Stores, svc *apiregistrationv1.APIService) error {
	st := stores("apiservices.apiregistration.k8s.io")
	if st == nil {
		return fmt.Errorf("apiservices are not served")
	}
	var want apiregistrationv1.APIServiceCondition
	for _, c := range svc.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			want = c
		}
	}
	ctx = genericapirequest.WithUser(ctx, aggregatorUser)
	_, _, err := st.Update(ctx, &registry.UpdateRequest{
		Name: svc.Name, Subresource: "status",
		Options: metav1.UpdateOptions{FieldManager: "kube-aggregator"},
		Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
			cur, ok := existing.(*apiregistrationv1.APIService)
			if !ok || cur.UID != svc.UID {
				return nil, fmt.Errorf("APIService %s was replaced", svc.Name)
			}
			cur = cur.DeepCopy()
			setCondition(cur, want)
			return cur, nil
		},
	})
	return err
}
