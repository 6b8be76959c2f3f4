package apiserver

import (
	"net/http"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/apis/core/options"
	"github.com/kite-project/kite/registry"
)

// admitConnect runs admission for a pods/exec, attach or portforward
// request before it is connected, as upstream's ConnectResource: the
// query decoded into the subresource's options object is what mutating
// and validating admission (webhooks and policies on CONNECT) see.
// pods/log is a read, not a CONNECT, and is not admitted. The proxy
// subresources of pods, services and nodes are admitted with their
// ProxyOptions.
func admitConnect(r *http.Request, store *registry.Store, info requestInfo) error {
	if info.Subresource == "proxy" {
		// The proxy subresources of pods, services and nodes are
		// connecters upstream too; their options carry the path.
		var opts runtime.Object
		var kind string
		switch info.Resource {
		case "pods":
			opts, kind = &v1.PodProxyOptions{Path: info.ProxyPath}, "PodProxyOptions"
		case "services":
			opts, kind = &v1.ServiceProxyOptions{Path: info.ProxyPath}, "ServiceProxyOptions"
		case "nodes":
			opts, kind = &v1.NodeProxyOptions{Path: info.ProxyPath}, "NodeProxyOptions"
		default:
			return nil
		}
		return store.AdmitConnect(r.Context(), info.Namespace, info.Name, info.Subresource, opts, v1.SchemeGroupVersion.WithKind(kind))
	}
	if info.Resource != "pods" {
		return nil
	}
	var opts runtime.Object
	var kind string
	switch q := r.URL.Query(); info.Subresource {
	case "exec":
		opts, kind = options.Exec(q), "PodExecOptions"
	case "attach":
		opts, kind = options.Attach(q), "PodAttachOptions"
	case "portforward":
		o, err := options.PortForward(q)
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		opts, kind = o, "PodPortForwardOptions"
	default:
		return nil
	}
	return store.AdmitConnect(r.Context(), info.Namespace, info.Name, info.Subresource, opts, v1.SchemeGroupVersion.WithKind(kind))
}
