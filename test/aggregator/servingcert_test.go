package aggregator_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"testing"
)

// TestServingCertificateNamesTheKubernetesService: the API server's
// certificate verifies for the names and the cluster IP of the
// `kubernetes` Service, as kube-apiserver's, since an extension API
// server in a pod (sample-apiserver in the Aggregator conformance test)
// reads the extension-apiserver-authentication ConfigMap through
// rest.InClusterConfig, which dials KUBERNETES_SERVICE_HOST and verifies
// the certificate against it.
func TestServingCertificateNamesTheKubernetesService(t *testing.T) {
	cfg := shared.RESTConfig()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("server URL %q: %v", cfg.Host, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cfg.CAData) {
		t.Fatal("the REST config holds no CA certificate")
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: roots, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("dialing %s: %v", u.Host, err)
	}
	defer conn.Close()
	leaf := conn.ConnectionState().PeerCertificates[0]
	for _, name := range []string{
		"10.43.0.1", // the first address of the default --service-cluster-ip-range
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
				t.Errorf("the serving certificate does not verify for %s: %v", name, err)
			}
		})
	}
}
