package apiserver

import (
	"fmt"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// NewScheme returns a scheme with the built-in kinds client-go knows, the
// meta kinds (Status, options, discovery lists), aggregated discovery and
// apiextensions.k8s.io/v1.
// Each server gets its own: nothing global is mutated.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register client-go kinds: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register apiextensions.k8s.io/v1: %w", err)
	}
	if err := apiregistrationv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register apiregistration.k8s.io/v1: %w", err)
	}
	if err := apidiscoveryv2.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register apidiscovery.k8s.io/v2: %w", err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	// Options bodies say meta.k8s.io/v1 (client-go's DeleteOptions).
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	if err := metav1.AddMetaToScheme(s); err != nil {
		return nil, fmt.Errorf("register meta.k8s.io/v1 tables: %w", err)
	}
	return s, nil
}
