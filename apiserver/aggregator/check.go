package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// checkResult is one check of a remote APIService: its Available
// condition (without times) and, when its server answered, the resources
// it serves.
type checkResult struct {
	condition apiregistrationv1.APIServiceCondition
	resources *metav1.APIResourceList
}

// serviceChecks is the part of upstream's availability check that reads
// only the Service and its EndpointSlices: it returns the failing
// condition, or ok when the discovery check comes next. A pure decision.
func serviceChecks(svc *apiregistrationv1.APIService, service *corev1.Service, serviceErr error, slices []discoveryv1.EndpointSlice, slicesErr error) (cond apiregistrationv1.APIServiceCondition, ok bool) {
	ref := svc.Spec.Service
	fail := func(status apiregistrationv1.ConditionStatus, reason, format string, args ...any) (apiregistrationv1.APIServiceCondition, bool) {
		return apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)}, false
	}
	switch {
	case apierrors.IsNotFound(serviceErr):
		return fail(apiregistrationv1.ConditionFalse, "ServiceNotFound", "service/%s in %q is not present", ref.Name, ref.Namespace)
	case serviceErr != nil:
		return fail(apiregistrationv1.ConditionUnknown, "ServiceAccessError", "service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, serviceErr)
	}
	// Only a ClusterIP Service's port and endpoints are checked, as
	// upstream's (an ExternalName one goes straight to discovery).
	if service.Spec.Type == corev1.ServiceTypeClusterIP {
		portName, found := "", false
		for _, p := range service.Spec.Ports {
			if p.Port == *ref.Port {
				portName, found = p.Name, true
				break
			}
		}
		switch {
		case !found:
			return fail(apiregistrationv1.ConditionFalse, "ServicePortError", "service/%s in %q is not listening on port %d", ref.Name, ref.Namespace, *ref.Port)
		case slicesErr != nil:
			return fail(apiregistrationv1.ConditionUnknown, "EndpointsAccessError", "service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, slicesErr)
		case len(slices) == 0:
			return fail(apiregistrationv1.ConditionFalse, "EndpointsNotFound", "cannot find endpointslices for service/%s in %q", ref.Name, ref.Namespace)
		case !hasAvailableEndpoint(portName, slices):
			return fail(apiregistrationv1.ConditionFalse, "MissingEndpoints", "endpointslices for service/%s in %q have no addresses with port name %q", ref.Name, ref.Namespace, portName)
		}
	}
	return apiregistrationv1.APIServiceCondition{}, true
}

// hasAvailableEndpoint is upstream's: a ready (or, when unknown, any)
// endpoint with an address, in a slice with the port named portName.
func hasAvailableEndpoint(portName string, slices []discoveryv1.EndpointSlice) bool {
	for _, s := range slices {
		hasPort := false
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == portName {
				hasPort = true
				break
			}
		}
		if !hasPort {
			continue
		}
		for _, e := range s.Endpoints {
			if (e.Conditions.Ready == nil || *e.Conditions.Ready) && len(e.Addresses) > 0 {
				return true
			}
		}
	}
	return false
}

var (
	passed = apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue, Reason: "Passed", Message: "all checks passed"}
)

// check runs the availability checks of one remote APIService: the
// Service's, then a GET of the group version's discovery document on its
// server, as the aggregator itself (system:kube-aggregator in
// system:masters).
func (a *Aggregator) check(ctx context.Context, svc *apiregistrationv1.APIService, t *remoteTransport) checkResult {
	ref := svc.Spec.Service
	service, serviceErr := a.services.Service(ctx, ref.Namespace, ref.Name)
	var slices []discoveryv1.EndpointSlice
	var slicesErr error
	if serviceErr == nil && service.Spec.Type == corev1.ServiceTypeClusterIP {
		slices, slicesErr = a.services.EndpointSlices(ctx, ref.Namespace, ref.Name)
	}
	if cond, ok := serviceChecks(svc, service, serviceErr, slices, slicesErr); !ok {
		return checkResult{condition: cond}
	}
	if t == nil {
		return checkResult{condition: apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse,
			Reason: "FailedDiscoveryCheck", Message: fmt.Sprintf("APIService %s: no transport (its caBundle holds no certificate)", svc.Name)}}
	}
	list, err := a.discover(ctx, svc, t)
	if err != nil {
		return checkResult{condition: apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse,
			Reason: "FailedDiscoveryCheck", Message: err.Error()}}
	}
	return checkResult{condition: passed, resources: list}
}

// discover reads /apis/<group>/<version> of the APIService's server.
func (a *Aggregator) discover(ctx context.Context, svc *apiregistrationv1.APIService, t *remoteTransport) (*metav1.APIResourceList, error) {
	ref := svc.Spec.Service
	u, err := a.services.ResolveEndpoint(ref.Namespace, ref.Name, *ref.Port)
	if err != nil {
		return nil, err
	}
	u.Path = "/apis/" + svc.Spec.Group + "/" + svc.Spec.Version
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
	client := &http.Client{Transport: t.transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.transport.CloseIdleConnections()
		return nil, fmt.Errorf("failing or missing response from %v: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
		return nil, fmt.Errorf("failing or missing response from %v: bad status from %v: %d", u, u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("failing or missing response from %v: %w", u, err)
	}
	list := &metav1.APIResourceList{}
	if err := json.Unmarshal(body, list); err != nil {
		// The server answered: it is available, its discovery unreadable
		// (upstream's check looks at the status only).
		return &metav1.APIResourceList{GroupVersion: svc.Spec.Group + "/" + svc.Spec.Version}, nil
	}
	return list, nil
}

// nextCondition is the Available condition to write, stamped with now
// when its status changes, and whether it differs from the object's.
func nextCondition(svc *apiregistrationv1.APIService, want apiregistrationv1.APIServiceCondition, now metav1.Time) (apiregistrationv1.APIServiceCondition, bool) {
	for _, c := range svc.Status.Conditions {
		if c.Type != want.Type {
			continue
		}
		if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
			return c, false
		}
		want.LastTransitionTime = c.LastTransitionTime
		if c.Status != want.Status {
			want.LastTransitionTime = now
		}
		return want, true
	}
	want.LastTransitionTime = now
	return want, true
}

// setCondition replaces (or adds) the condition of cond's type.
func setCondition(svc *apiregistrationv1.APIService, cond apiregistrationv1.APIServiceCondition) {
	for i := range svc.Status.Conditions {
		if svc.Status.Conditions[i].Type == cond.Type {
			svc.Status.Conditions[i] = cond
			return
		}
	}
	svc.Status.Conditions = append(svc.Status.Conditions, cond)
}
