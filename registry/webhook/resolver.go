package webhook

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ServiceResolver resolves a webhook's Service reference from the
// server's own stores. Where EndpointSlices are served it resolves as
// kube-apiserver's endpoint resolver (--enable-aggregator-routing) does:
// to a ready endpoint of the Service's slices, so that a webhook served by
// a pod works without a service proxy on the API server's host, and to a
// 503 "no endpoints available" when there is none. It never falls back to
// the clusterIP then: with no proxy beside the API server, a clusterIP
// leads wherever the host's default route does. Where EndpointSlices are
// not served it resolves to the clusterIP, as upstream's default
// resolver; an ExternalName Service resolves to its name.
type ServiceResolver struct {
	Stores Stores
}

// ResolveEndpoint implements webhookutil.ServiceResolver.
func (r *ServiceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	ctx := context.Background()
	services := r.Stores("services")
	if services == nil {
		return nil, fmt.Errorf("services are not served: cannot resolve service %s/%s", namespace, name)
	}
	obj, err := services.Get(ctx, namespace, name, &metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: %w", namespace, name, err)
	}
	svc := obj.(*corev1.Service)
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return nil, fmt.Errorf("service %s/%s has no port %d", namespace, name, port)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port)))}, nil
	}
	if slices := r.Stores("endpointslices.discovery.k8s.io"); slices != nil {
		u, err := fromSlices(ctx, r, namespace, name, sp)
		if err != nil {
			return nil, fmt.Errorf("endpoints of service %s/%s: %w", namespace, name, err)
		}
		if u == nil {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
		}
		return u, nil
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil, fmt.Errorf("service %s/%s has no ready endpoint and no clusterIP", namespace, name)
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port)))}, nil
}

// fromSlices returns the first ready endpoint of the Service's slices on
// the port sp targets, or nil.
func fromSlices(ctx context.Context, r *ServiceResolver, namespace, name string, sp *corev1.ServicePort) (*url.URL, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
	list, err := r.Stores("endpointslices.discovery.k8s.io").List(ctx, namespace, listOptionsWithLabels{sel}.ListOptions())
	if err != nil {
		return nil, err
	}
	slices, ok := list.(*discoveryv1.EndpointSliceList)
	if !ok {
		return nil, nil
	}
	for _, s := range slices.Items {
		var port *int32
		for _, p := range s.Ports {
			if p.Port != nil && ((p.Name != nil && *p.Name == sp.Name) || (sp.TargetPort.Type == intstr.Int && *p.Port == sp.TargetPort.IntVal)) {
				port = p.Port
				break
			}
		}
		if port == nil {
			continue
		}
		for _, e := range s.Endpoints {
			if (e.Conditions.Ready == nil || *e.Conditions.Ready) && len(e.Addresses) > 0 {
				return &url.URL{Scheme: "https", Host: net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*port)))}, nil
			}
		}
	}
	return nil, nil
}
