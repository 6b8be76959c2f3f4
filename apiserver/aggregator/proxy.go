package aggregator

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// remote is one remote group version as requests see it.
type remote struct {
	apiService *apiregistrationv1.APIService
	transport  *remoteTransport
	services   Services
	// recheck asks for the checks to run again (a proxied request found
	// the server gone: its APIService should not wait for the next
	// period to say so).
	recheck   func()
	available bool
	// resources are what its server last said it serves (nil before it
	// answered); stale when it did not answer the last check.
	resources *metav1.APIResourceList
	stale     bool
}

// ServeHTTP proxies an authenticated, authorized request to the
// extension API server, as kube-aggregator's proxy handler: 503 "service
// unavailable" while the APIService is not Available, the user in the
// X-Remote-* headers (and nothing of the client's credentials), the
// front-proxy client certificate, the response streamed back as it comes
// (watches included), upgrades (exec and the like) passed through.
func (r *remote) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !r.available {
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	if r.transport == nil {
		http.Error(w, fmt.Sprintf("APIService %s: no transport (its caBundle holds no certificate)", r.apiService.Name), http.StatusInternalServerError)
		return
	}
	user, ok := genericapirequest.UserFrom(req.Context())
	if !ok {
		http.Error(w, "missing user", http.StatusInternalServerError)
		return
	}
	ref := r.apiService.Spec.Service
	loc, err := r.services.ResolveEndpoint(ref.Namespace, ref.Name, *ref.Port)
	if err != nil {
		klog.FromContext(req.Context()).Error(err, "Resolving the service of an APIService", "apiservice", r.apiService.Name)
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "https"
			pr.Out.URL.Host = loc.Host
			pr.Out.Host = loc.Host
			// The extension server trusts the headers, vouched for by the
			// front-proxy certificate: the client's own credentials and
			// impersonation requests (already acted on) go no further.
			pr.Out.Header.Del("Authorization")
			for k := range pr.Out.Header {
				if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
					pr.Out.Header.Del(k)
				}
			}
			transport.SetAuthProxyHeaders(pr.Out, user.GetName(), user.GetUID(), user.GetGroups(), user.GetExtra())
		},
		Transport: r.transport.transport,
		// Watches and streamed lists reach the client as they come.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			if req.Context().Err() == nil {
				r.recheck()
			}
			http.Error(w, fmt.Sprintf("error trying to reach service: %v", err), http.StatusServiceUnavailable)
		},
	}
	proxy.ServeHTTP(w, req)
}
