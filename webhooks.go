package kite

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
)

// WebhookInstallOptions install admission webhooks that point at a
// webhook server in the embedding process, as envtest's
// WebhookInstallOptions: Start generates a CA and a serving certificate
// for LocalServingHost, writes them to LocalServingCertDir (tls.crt,
// tls.key: controller-runtime's webhook server's defaults), points every
// webhook's clientConfig at https://LocalServingHost:LocalServingPort
// (a Service reference's path is kept as the URL's path) with the CA as
// caBundle, and installs the configurations before it returns.
// Server.WebhookInstallOptions returns them filled in, so the test hands
// host, port and directory to its webhook server.
type WebhookInstallOptions struct {
	// LocalServingHost is the host the webhook server listens on; "" is
	// 127.0.0.1.
	LocalServingHost string
	// LocalServingPort is its port; 0 picks a free one.
	LocalServingPort int
	// LocalServingCertDir receives tls.crt and tls.key; "" is a
	// directory under the data directory.
	LocalServingCertDir string
	// LocalServingCAData is the CA's certificate (PEM), set by Start.
	LocalServingCAData []byte
	// MutatingWebhooks and ValidatingWebhooks are the configurations.
	MutatingWebhooks   []*admissionregistrationv1.MutatingWebhookConfiguration
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
}

// WebhookInstallOptions returns the options the webhooks were installed
// with: host, port, certificate directory and CA filled in.
func (s *Server) WebhookInstallOptions() WebhookInstallOptions { return s.webhooks }

// installWebhooks does what WebhookInstallOptions says, within the ready
// timeout; with no webhooks it does nothing.
func (s *Server) installWebhooks(ctx context.Context, opts Options) error {
	w := opts.Webhooks
	if len(w.MutatingWebhooks) == 0 && len(w.ValidatingWebhooks) == 0 {
		return nil
	}
	// The caller's configurations stay as they were.
	w.MutatingWebhooks, w.ValidatingWebhooks = slices.Clone(w.MutatingWebhooks), slices.Clone(w.ValidatingWebhooks)
	if w.LocalServingHost == "" {
		w.LocalServingHost = "127.0.0.1"
	}
	if w.LocalServingPort == 0 {
		port, err := freePort(w.LocalServingHost)
		if err != nil {
			return err
		}
		w.LocalServingPort = port
	}
	if w.LocalServingCertDir == "" {
		w.LocalServingCertDir = filepath.Join(s.dataDir, "webhook-certs")
	}
	if err := os.MkdirAll(w.LocalServingCertDir, 0o700); err != nil {
		return fmt.Errorf("webhook certificate directory: %w", err)
	}
	var ips []net.IP
	var names []string
	if ip := net.ParseIP(w.LocalServingHost); ip != nil {
		ips = append(ips, ip)
	} else {
		names = append(names, w.LocalServingHost)
	}
	// A CA of the webhooks' own: the cluster CA's certificates are
	// trusted as the API server's, a webhook server's must not be.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(w.LocalServingHost, ips, names)
	if err != nil {
		return fmt.Errorf("webhook serving certificate: %w", err)
	}
	// certPEM is the serving certificate followed by its CA.
	serving, rest := pem.Decode(certPEM)
	ca, _ := pem.Decode(rest)
	if serving == nil || ca == nil {
		return errors.New("webhook serving certificate: no CA in the generated chain")
	}
	w.LocalServingCAData = pem.EncodeToMemory(ca)
	if err := os.WriteFile(filepath.Join(w.LocalServingCertDir, "tls.crt"), certPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(w.LocalServingCertDir, "tls.key"), keyPEM, 0o600); err != nil {
		return err
	}
	base := "https://" + net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort))
	point := func(cc *admissionregistrationv1.WebhookClientConfig) {
		// The path of the Service reference, or a URL given as a bare
		// path ("/validate-..."), as envtest's.
		path := ""
		if cc.Service != nil && cc.Service.Path != nil {
			path = *cc.Service.Path
		} else if cc.URL != nil && strings.HasPrefix(*cc.URL, "/") {
			path = *cc.URL
		}
		url := base + path
		cc.URL, cc.Service, cc.CABundle = &url, nil, w.LocalServingCAData
	}
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	api := cs.AdmissionregistrationV1()
	for i, c := range w.MutatingWebhooks {
		c = c.DeepCopy()
		for j := range c.Webhooks {
			point(&c.Webhooks[j].ClientConfig)
		}
		w.MutatingWebhooks[i] = c
		if err := createOrUpdate(ctx, api.MutatingWebhookConfigurations(), c); err != nil {
			return err
		}
	}
	for i, c := range w.ValidatingWebhooks {
		c = c.DeepCopy()
		for j := range c.Webhooks {
			point(&c.Webhooks[j].ClientConfig)
		}
		w.ValidatingWebhooks[i] = c
		if err := createOrUpdate(ctx, api.ValidatingWebhookConfigurations(), c); err != nil {
			return err
		}
	}
	s.webhooks = w
	// Admission reads the configurations from the watch caches: wait
	// until they hold them, so the first request after Start is admitted.
	return s.waitWebhooksCached(ctx, len(w.MutatingWebhooks), len(w.ValidatingWebhooks))
}

func (s *Server) waitWebhooksCached(ctx context.Context, mutating, validating int) error {
	count := func(resource string) (int, error) {
		store := s.resources.Store(resource)
		if store == nil {
			return 0, fmt.Errorf("%s is not served", resource)
		}
		list, err := store.List(ctx, "", &metainternalversion.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return 0, err
		}
		return meta.LenList(list), nil
	}
	for {
		m, err := count("mutatingwebhookconfigurations.admissionregistration.k8s.io")
		if err != nil {
			return err
		}
		v, err := count("validatingwebhookconfigurations.admissionregistration.k8s.io")
		if err != nil {
			return err
		}
		if m >= mutating && v >= validating {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("webhook configurations not served: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// freePort returns a port free on host now, as envtest picks one.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("free port for webhooks on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// configurations is what the typed clients of both webhook
// configuration kinds offer.
type configurations[T interface {
	*admissionregistrationv1.MutatingWebhookConfiguration | *admissionregistrationv1.ValidatingWebhookConfiguration
	metav1.Object
}] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// createOrUpdate installs c, replacing a configuration of its name that
// a data directory kept from an earlier start.
func createOrUpdate[T interface {
	*admissionregistrationv1.MutatingWebhookConfiguration | *admissionregistrationv1.ValidatingWebhookConfiguration
	metav1.Object
}](ctx context.Context, api configurations[T], c T) error {
	_, err := api.Create(ctx, c, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur T
		if cur, err = api.Get(ctx, c.GetName(), metav1.GetOptions{}); err == nil {
			c.SetResourceVersion(cur.GetResourceVersion())
			_, err = api.Update(ctx, c, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("install webhook configuration %s: %w", c.GetName(), err)
	}
	return nil
}
