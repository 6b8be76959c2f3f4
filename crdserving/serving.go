package crdserving

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/controllers/crd"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/apiextensions"
	"github.com/kite-project/kite/registry/table"
	"github.com/kite-project/kite/registry/webhook"
	"github.com/kite-project/kite/resourceset"
)

// Serving serves custom resources in a resource set as the CRD objects
// say: a follower of the CRDs' Store installs and removes their resources
// (Run), and the CRD controller names, establishes and cleans up CRDs
// through the API (StartController).
type Serving struct {
	resources *resourceset.Set
	installer *installer
	follower  *follower
	// stopController ends the CRD controller and waits for it.
	stopController func()
}

// New returns what serves the custom resources of set's CRDs; their
// stacks run under ctx.
func New(ctx context.Context, set *resourceset.Set) (*Serving, error) {
	// Conversion webhooks behind a Service are reached as admission
	// webhooks are: through the Service's EndpointSlices.
	gvs, schemes := apiextensions.ConversionReviewGroupVersions()
	clients, err := webhook.NewClientManager(&webhook.ServiceResolver{Stores: set.Store}, gvs, schemes...)
	if err != nil {
		return nil, fmt.Errorf("conversion webhooks: %w", err)
	}
	s := &Serving{resources: set, installer: &installer{ctx: ctx, resources: set, conversions: apiextensions.NewConversions(clients), served: map[string]*servedCRD{}}}
	s.follower, err = newFollower(set.Store("customresourcedefinitions.apiextensions.k8s.io"), s.installer)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Run follows the CRDs until ctx ends. Start it once the set serves: what
// it installs must reach the API server.
func (s *Serving) Run(ctx context.Context) { s.follower.Run(ctx) }

// StartController runs the controller that names, establishes and cleans
// up CRDs, a client of the API at cfg, until StopController: CRDs are part
// of serving the API, as upstream runs these controllers inside
// kube-apiserver.
func (s *Serving) StartController(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kite-crd-controller"
	// CRDs are large objects (their schemas): protobuf is cheaper to
	// encode and decode than JSON on both sides, as kube-apiserver's
	// in-process clients use it.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("CRD controller: client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("CRD controller: dynamic client: %w", err)
	}
	c, err := crd.New(crd.Options{Client: client, Dynamic: dyn, Unserved: s.installer})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	s.stopController = func() { cancel(); <-done }
	return nil
}

// StopController ends the CRD controller, if it runs, and waits for it.
func (s *Serving) StopController() {
	if s.stopController != nil {
		s.stopController()
	}
}

// Tables adapts the table package to the API server. Custom resources
// (unstructured objects, which carry their kind) get their CRD's columns.
func (s *Serving) Tables() apiserver.TableFunc {
	tc := table.New(table.Options{Typer: s.resources.Scheme()})
	return func(obj k8sruntime.Object, include metav1.IncludeObjectPolicy, noHeaders bool, gv schema.GroupVersion) (*metav1.Table, error) {
		opts := table.ConvertOptions{IncludeObject: include, NoHeaders: noHeaders, GroupVersion: gv}
		switch obj.(type) {
		case *unstructured.Unstructured, *unstructured.UnstructuredList:
			opts.Columns = s.installer.tableColumns(obj.GetObjectKind().GroupVersionKind())
		}
		return tc.Convert(obj, opts)
	}
}

// Instances returns the store of the CRD's custom resources (its storage
// version), or nil when it is not served.
func (s *Serving) Instances(name string) *registry.Store { return s.installer.Instances(name) }

// Served returns the names of the CRDs whose resources are served, sorted.
func (s *Serving) Served() []string {
	s.installer.mu.Lock()
	defer s.installer.mu.Unlock()
	return slices.Sorted(maps.Keys(s.installer.served))
}
