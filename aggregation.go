package kite

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/apiserver/aggregator"
	"github.com/kite-project/kite/apiserver/metricsapi"
	"github.com/kite-project/kite/pki"
	"github.com/kite-project/kite/resourceset"
)

// newAggregator makes the aggregation layer (the front-proxy CA and
// client certificate in the pki directory) and starts it following the
// APIServices; newAPI hands it to the API server.
func (s *Server) newAggregator() error {
	fp, err := pki.EnsureFrontProxy(filepath.Join(s.dataDir, "pki"))
	if err != nil {
		return fmt.Errorf("front-proxy certificates: %w", err)
	}
	s.frontProxyCA = fp.CAPEM
	s.aggregator, err = aggregator.New(aggregator.Options{
		APIServices: resourceset.StoreListerWatcher(s.resources.Store("apiservices.apiregistration.k8s.io")),
		Stores:      s.resources.Store,
		FrontProxy:  fp.Client,
	})
	if err != nil {
		return err
	}
	s.wg.Go(func() { s.aggregator.Run(s.runCtx) })
	return nil
}

// newMetricsAPI makes the metrics API over the agents' summaries (through
// the node proxy's client certificate) and starts it.
func (s *Server) newMetricsAPI(opts Options) (err error) {
	s.metricsAPI, err = metricsapi.New(metricsapi.Options{
		Nodes: s.resources.Store("nodes"), Pods: s.resources.Store("pods"),
		Scrape: s.nodeProxy.Get, Resolution: opts.MetricResolution,
	})
	if err != nil {
		return err
	}
	s.wg.Go(func() { s.metricsAPI.Run(s.runCtx) })
	return nil
}

// remotes are the group versions the API server does not serve from its
// stores: the extension servers' first (a metrics-server installed by
// its APIService wins over the built-in metrics API), then the metrics
// API's.
type remotes []apiserver.Remote

func (rs remotes) Proxy(gv schema.GroupVersion) http.Handler {
	for _, r := range rs {
		if h := r.Proxy(gv); h != nil {
			return h
		}
	}
	return nil
}

func (rs remotes) Groups() []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, r := range rs {
		out = append(out, r.Groups()...)
	}
	return out
}

// GroupPriority is the priority of the first remote that serves group,
// the one Proxy routes to.
func (rs remotes) GroupPriority(group string) (int32, string, bool) {
	for _, r := range rs {
		if p, name, ok := r.GroupPriority(group); ok {
			return p, name, true
		}
	}
	return 0, "", false
}

func (rs remotes) Discovery() []apidiscoveryv2.APIGroupDiscovery {
	var out []apidiscoveryv2.APIGroupDiscovery
	for _, r := range rs {
		out = append(out, r.Discovery()...)
	}
	return out
}

// ExtensionAuthenticationConfigMap is the ConfigMap in kube-system that
// tells extension API servers which client CAs to trust and which headers
// carry the user, as kube-apiserver's cluster authentication trust
// controller publishes it.
const ExtensionAuthenticationConfigMap = "extension-apiserver-authentication"

// ensureExtensionAuthentication writes ExtensionAuthenticationConfigMap:
// the cluster CA for client certificates, and the front-proxy CA, its
// client's name and the X-Remote-* headers for requests that come through
// the aggregation layer.
func (s *Server) ensureExtensionAuthentication(ctx context.Context) error {
	list := func(v ...string) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	want := map[string]string{
		"client-ca-file":                     string(s.bundle.CAPEM),
		"requestheader-client-ca-file":       string(s.frontProxyCA),
		"requestheader-allowed-names":        list(pki.FrontProxyClientCommonName),
		"requestheader-username-headers":     list("X-Remote-User"),
		"requestheader-uid-headers":          list("X-Remote-Uid"),
		"requestheader-group-headers":        list("X-Remote-Group"),
		"requestheader-extra-headers-prefix": list("X-Remote-Extra-"),
	}
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		return err
	}
	cms := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	cur, err := cms.Get(ctx, ExtensionAuthenticationConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ExtensionAuthenticationConfigMap}, Data: want}, metav1.CreateOptions{})
	case err == nil && !equalData(cur.Data, want):
		cur.Data = want
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("configmap %s/%s: %w", metav1.NamespaceSystem, ExtensionAuthenticationConfigMap, err)
	}
	return nil
}

func equalData(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
