// Package scaleclient reads and writes the scale subresource of any
// resource a controller reference or a scaleTargetRef names by apiVersion
// and kind (built-in workloads and custom resources with scale), as the
// disruption and HPA controllers upstream do through client-go's scale
// client and a discovery RESTMapper.
package scaleclient

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
)

// Client reads and writes Scales by kind.
type Client struct {
	mapper *restmapper.DeferredDiscoveryRESTMapper
	scales scale.ScalesGetter
}

// New returns a Client for the API server cfg reaches.
func New(cfg *rest.Config) (*Client, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("scale client: discovery of %s: %w", cfg.Host, err)
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	scales, err := scale.NewForConfig(rest.CopyConfig(cfg), mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cached))
	if err != nil {
		return nil, fmt.Errorf("scale client of %s: %w", cfg.Host, err)
	}
	return &Client{mapper: mapper, scales: scales}, nil
}

// Resource returns the group resource of kind in apiVersion. A kind
// discovery did not know is looked up again once (a CRD created since).
func (c *Client) Resource(apiVersion, kind string) (schema.GroupResource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupResource{}, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	m, err := c.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	}
	if err != nil {
		return schema.GroupResource{}, fmt.Errorf("resource of %s %s: %w", apiVersion, kind, err)
	}
	return m.Resource.GroupResource(), nil
}

// Get returns the Scale of the named object of kind.
func (c *Client) Get(ctx context.Context, namespace, apiVersion, kind, name string) (*autoscalingv1.Scale, schema.GroupResource, error) {
	gr, err := c.Resource(apiVersion, kind)
	if err != nil {
		return nil, gr, err
	}
	s, err := c.scales.Scales(namespace).Get(ctx, gr, name, metav1.GetOptions{})
	return s, gr, err
}

// Update writes s, the Scale of an object of gr (as Get returned it:
// its resourceVersion is the precondition).
func (c *Client) Update(ctx context.Context, gr schema.GroupResource, s *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	return c.scales.Scales(s.Namespace).Update(ctx, gr, s, opts)
}
