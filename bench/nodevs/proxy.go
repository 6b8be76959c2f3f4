package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// unsupportedServiceSelector is the field selector of the kubelet's
// Service informer (pkg/kubelet, since 1.34). Kite's API server does not
// know the field spec.clusterIP for Services yet and refuses the list, and
// the kubelet then starts no API pod ("services have not yet been read at
// least once"). The proxy drops the selector: the kubelet then also caches
// headless Services, which it skips when it builds the service
// environment variables, so the pods it runs are the same.
const unsupportedServiceSelector = "spec.clusterIP!=None"

// serveProxy serves plain HTTP on listen, forwarding every request to the
// API server of kubeconfig (with its credentials and CA) and flushing
// watches at once, and writes a kubeconfig for the proxy to out. Both
// agents of bench/nodevs.sh reach the API server through it, so the extra
// hop costs both alike.
func serveProxy(ctx context.Context, kubeconfig, listen, out string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return fmt.Errorf("server %q: %w", cfg.Host, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return fmt.Errorf("transport for %s: %w", cfg.Host, err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		r.Header.Del("Authorization") // the transport sets the kubeconfig's
		if q := r.URL.Query(); q.Get("fieldSelector") == unsupportedServiceSelector {
			q.Del("fieldSelector")
			r.URL.RawQuery = q.Encode()
		}
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", listen, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "http://" + l.Addr().String()}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*kc, out); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	srv := &http.Server{Handler: rp}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "nodevs: proxy on %s to %s\n", l.Addr(), cfg.Host)
	if err := srv.Serve(l); err != http.ErrServerClosed {
		return err
	}
	return nil
}
