package apiserver

import (
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestInfo is what the URL path says about an API request.
type requestInfo struct {
	GroupVersion schema.GroupVersion
	// Group is given but no version: /apis/<group>.
	GroupOnly   bool
	Namespace   string
	Resource    string
	Name        string
	Subresource string
	// ProxyPath is what follows a proxy subresource (pods/<name>/proxy/a/b:
	// "/a/b"), as upstream's connect handler makes its "path" option: a
	// leading slash when not empty, the request's trailing slash kept.
	ProxyPath string
	// Watch is set by the legacy /watch/ path segment.
	Watch bool
}

// parsePath splits /api/v1/... and /apis/<group>/<version>/... paths.
// Unknown shapes are 404 NotFound, as upstream answers them.
func parsePath(path string) (requestInfo, error) {
	parts := splitPath(path)
	var info requestInfo
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		info.GroupVersion = schema.GroupVersion{Version: parts[1]}
		parts = parts[2:]
	case len(parts) == 2 && parts[0] == "apis":
		info.GroupVersion = schema.GroupVersion{Group: parts[1]}
		info.GroupOnly = true
		return info, nil
	case len(parts) >= 3 && parts[0] == "apis":
		info.GroupVersion = schema.GroupVersion{Group: parts[1], Version: parts[2]}
		parts = parts[3:]
	default:
		return info, notFoundPath(path)
	}
	if len(parts) > 0 && parts[0] == "watch" {
		info.Watch = true
		parts = parts[1:]
	}
	// /namespaces/<ns>/<resource>/... unless it is the namespace's own
	// subresource (/namespaces/<name>/status, /finalize).
	if len(parts) >= 3 && parts[0] == "namespaces" && parts[2] != "status" && parts[2] != "finalize" {
		info.Namespace = parts[1]
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
	case 1:
		info.Resource = parts[0]
	case 2:
		info.Resource, info.Name = parts[0], parts[1]
	case 3:
		info.Resource, info.Name, info.Subresource = parts[0], parts[1], parts[2]
	default:
		// Only a proxy subresource takes a path of its own.
		if parts[2] != "proxy" {
			return info, notFoundPath(path)
		}
		info.Resource, info.Name, info.Subresource = parts[0], parts[1], parts[2]
		info.ProxyPath = "/" + strings.Join(parts[3:], "/")
	}
	if info.Subresource == "proxy" && strings.HasSuffix(path, "/") && !strings.HasSuffix(info.ProxyPath, "/") {
		info.ProxyPath += "/"
	}
	return info, nil
}

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

func notFoundPath(path string) error {
	err := apierrors.NewNotFound(schema.GroupResource{}, "")
	err.ErrStatus.Message = "the server could not find the requested resource"
	err.ErrStatus.Details = nil
	return err
}

// verb is the Kubernetes verb of a request to a resource.
func verb(r *http.Request, info requestInfo) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if info.Watch || isWatchQuery(r) {
			return "watch"
		}
		if info.Name == "" {
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if info.Name == "" {
			return "deletecollection"
		}
		return "delete"
	}
	return ""
}

func isWatchQuery(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}
