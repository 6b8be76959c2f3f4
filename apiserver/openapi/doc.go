// Package openapi generates and serves the API server's OpenAPI documents,
// /openapi/v2 and /openapi/v3, from the k8s.io/api Go types of the
// resources it serves, by reflection at start-up:
//
//   - definitions are named as upstream's ("io.k8s.api.core.v1.Pod"), with
//     properties from json tags (inline and embedded structs flattened),
//     descriptions from each type's SwaggerDoc(), required fields as
//     openapi-gen decides (no omitempty and no +optional);
//   - x-kubernetes-patch-strategy and x-kubernetes-patch-merge-key from the
//     struct tags, x-kubernetes-list-type, -list-map-keys and -map-type from
//     openapi-gen's comment markers (read from k8s.io/api's sources by
//     gen_markers.go into markers_generated.go, since comments are gone at
//     run time);
//   - types that describe themselves (metav1.Time, MicroTime, Quantity,
//     IntOrString) as the strings with formats they declare, and in v3 as
//     oneOf integer|string or string|number, as upstream;
//   - x-kubernetes-group-version-kind on every served kind and its list;
//   - paths and operations for each resource's verbs and subresources, with
//     upstream's operation ids, x-kubernetes-action, and the dryRun,
//     fieldManager and fieldValidation parameters on writes (kubectl reads
//     fieldValidation there to decide that the server validates fields).
//
// /openapi/v2 is served as JSON or, when asked, as the protobuf kubectl
// prefers (application/com.github.proto-openapi.spec.v2@v1.0+protobuf).
// Custom resources' schemas, written for v3, are converted for it as
// upstream's v2 builder does (v2.go: allOf, oneOf, anyOf and not dropped,
// nullable values untyped, fields that preserve unknown ones without
// properties, a root that does so a plain object); one that still does
// not encode is described as a plain object of its kind and logged, so a
// single schema never fails the whole document.
// /openapi/v3 lists one document per group version with a
// serverRelativeURL carrying its hash; the documents themselves are served
// by kube-openapi's handler3 (JSON or protobuf, immutable when fetched by
// hash), which kubectl explain and kubectl apply use.
//
// How the apiserver wires it, once at start-up with what it serves:
//
//	oa, err := openapi.New(openapi.Options{Version: "v1.37.2", Resources: []openapi.Resource{{
//		GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Plural: "pods", Namespaced: true,
//		Verbs:  []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"},
//		Object: &corev1.Pod{}, List: &corev1.PodList{},
//		Subresources: []openapi.Subresource{{Name: "status", Verbs: []string{"get", "update", "patch"}}},
//	}, ...}})
//	mux.Handle("/openapi/", oa)     // /openapi/v2, /openapi/v3, /openapi/v3/...
//	mux.Handle("/openapi/v2", oa)
//	mux.Handle("/openapi/v3", oa)
//	// or, with Kite's apiserver: apiserver.Options{Extra: map[string]http.Handler{"/openapi/": oa}}
//	// oa.Definitions() feeds a server-side apply type converter.
package openapi
