package openapi

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Query parameters, with upstream's descriptions shortened. Write verbs
// carry fieldValidation: kubectl checks for it in the OpenAPI document to
// decide whether the server validates fields (and then leaves client-side
// validation off).
var (
	paramPretty          = queryParam("pretty", "string", "If 'true', then the output is pretty printed.")
	paramDryRun          = queryParam("dryRun", "string", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed")
	paramFieldManager    = queryParam("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes.")
	paramFieldValidation = queryParam("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict.")
	paramForce           = queryParam("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people.")
	paramGrace           = queryParam("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted.")
	paramPropagation     = queryParam("propagationPolicy", "string", "Whether and how garbage collection will be performed: Orphan, Background or Foreground.")
	listParams           = []spec.Parameter{
		queryParam("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."),
		queryParam("continue", "string", "The continue option should be set when retrieving more results from the server."),
		queryParam("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
		queryParam("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
		queryParam("limit", "integer", "limit is a maximum number of responses to return for a list call."),
		queryParam("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."),
		queryParam("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."),
		queryParam("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`; the stream begins with synthetic events for every object."),
		queryParam("timeoutSeconds", "integer", "Timeout for the list/watch call."),
		queryParam("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."),
	}
)

func queryParam(name, typ, desc string) spec.Parameter {
	return spec.Parameter{
		ParamProps:        spec.ParamProps{Name: name, In: "query", Description: desc},
		SimpleSchema:      spec.SimpleSchema{Type: typ},
		CommonValidations: spec.CommonValidations{UniqueItems: true},
	}
}

func pathParam(name, desc string) spec.Parameter {
	return spec.Parameter{
		ParamProps:        spec.ParamProps{Name: name, In: "path", Description: desc, Required: true},
		SimpleSchema:      spec.SimpleSchema{Type: "string"},
		CommonValidations: spec.CommonValidations{UniqueItems: true},
	}
}

func bodyParam(s spec.Schema) spec.Parameter {
	return spec.Parameter{ParamProps: spec.ParamProps{Name: "body", In: "body", Required: true, Schema: &s}}
}

var (
	produces      = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	producesWatch = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"}
	patchConsumes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}
)

// operationName is upstream's operation id infix: "CoreV1", "CoordinationV1",
// "EventsV1" ("events.k8s.io" keeps its first label).
func operationName(gv schema.GroupVersion) string {
	g := "core"
	if gv.Group != "" {
		g, _, _ = strings.Cut(gv.Group, ".")
	}
	return upperFirst(g) + upperFirst(gv.Version)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

type pathBuilder struct {
	d     *definitions
	paths map[string]spec.PathItem
}

func (b *pathBuilder) op(id, action string, gvk schema.GroupVersionKind, ok spec.Schema, okCode int, params ...spec.Parameter) *spec.Operation {
	o := &spec.Operation{OperationProps: spec.OperationProps{ID: id}}
	o.Description = action + " " + gvk.Kind
	o.Produces = produces
	o.Consumes = []string{"*/*"}
	o.Schemes = []string{"https"}
	o.Tags = []string{strings.ToLower(operationName(gvk.GroupVersion()))}
	o.AddExtension("x-kubernetes-action", action)
	o.AddExtension("x-kubernetes-group-version-kind", map[string]string{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
	o.Parameters = params
	o.Responses = &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{
		okCode: {ResponseProps: spec.ResponseProps{Description: "OK", Schema: &ok}},
		401:    {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}},
	}}}
	if okCode == 201 { // create also answers 200 and 202, as upstream documents
		o.Responses.StatusCodeResponses[200] = spec.Response{ResponseProps: spec.ResponseProps{Description: "OK", Schema: &ok}}
		o.Responses.StatusCodeResponses[202] = spec.Response{ResponseProps: spec.ResponseProps{Description: "Accepted", Schema: &ok}}
	}
	return o
}

// add registers the paths and operations of one resource.
func (b *pathBuilder) add(r Resource) {
	gv := r.GVK.GroupVersion()
	base := prefix(gv)
	on := operationName(gv)
	var obj, list spec.Schema
	switch {
	case r.Schema != nil:
		obj, list = b.d.defineSchema(r.DefinitionName, *r.Schema)
	default:
		obj = b.d.schemaOf(typeOf(r.Object))
		if r.List != nil {
			list = b.d.schemaOf(typeOf(r.List))
		}
	}
	status := b.d.schemaOf(typeOf(&metav1.Status{}))
	deleteOpts := b.d.schemaOf(typeOf(&metav1.DeleteOptions{}))
	patch := b.d.schemaOf(typeOf(&metav1.Patch{}))

	ns := ""
	collection, item := base+"/"+r.Plural, base+"/"+r.Plural+"/{name}"
	var common []spec.Parameter
	if r.Namespaced {
		ns = "Namespaced"
		collection = base + "/namespaces/{namespace}/" + r.Plural
		item = collection + "/{name}"
		common = append(common, pathParam("namespace", "object name and auth scope, such as for teams and projects"))
	}
	common = append(common, paramPretty)
	kind := r.GVK.Kind
	write := []spec.Parameter{paramDryRun, paramFieldManager, paramFieldValidation}

	coll := b.paths[collection]
	coll.Parameters = common
	if r.has("list") {
		o := b.op("list"+on+ns+kind, "list", r.GVK, list, 200, listParams...)
		o.Produces = producesWatch
		coll.Get = o
	}
	if r.has("create") {
		coll.Post = b.op("create"+on+ns+kind, "post", r.GVK, obj, 201, append([]spec.Parameter{bodyParam(obj)}, write...)...)
	}
	if r.has("deletecollection") {
		params := append([]spec.Parameter{bodyParam(deleteOpts), paramDryRun, paramGrace, paramPropagation}, listParams...)
		coll.Delete = b.op("delete"+on+"Collection"+ns+kind, "deletecollection", r.GVK, status, 200, params...)
	}
	b.paths[collection] = coll

	one := b.paths[item]
	one.Parameters = append([]spec.Parameter{pathParam("name", "name of the "+kind)}, common...)
	if r.has("get") {
		one.Get = b.op("read"+on+ns+kind, "get", r.GVK, obj, 200)
	}
	if r.has("update") {
		one.Put = b.op("replace"+on+ns+kind, "put", r.GVK, obj, 200, append([]spec.Parameter{bodyParam(obj)}, write...)...)
	}
	if r.has("patch") {
		o := b.op("patch"+on+ns+kind, "patch", r.GVK, obj, 200, append([]spec.Parameter{bodyParam(patch)}, append(write, paramForce)...)...)
		o.Consumes = patchConsumes
		one.Patch = o
	}
	if r.has("delete") {
		one.Delete = b.op("delete"+on+ns+kind, "delete", r.GVK, status, 200, bodyParam(deleteOpts), paramDryRun, paramGrace, paramPropagation)
	}
	b.paths[item] = one

	if r.Namespaced && r.has("list") {
		all := b.paths[base+"/"+r.Plural]
		all.Parameters = []spec.Parameter{paramPretty}
		o := b.op("list"+on+kind+"ForAllNamespaces", "list", r.GVK, list, 200, listParams...)
		o.Produces = producesWatch
		all.Get = o
		b.paths[base+"/"+r.Plural] = all
	}

	for _, sub := range r.Subresources {
		sr := Resource{GVK: r.GVK, Verbs: sub.Verbs, Object: r.Object}
		sobj := obj
		if sub.Object != nil {
			sr.Object = sub.Object
			sobj = b.d.schemaOf(typeOf(sr.Object))
		}
		if !sub.GVK.Empty() {
			sr.GVK = sub.GVK
		}
		name := kind + upperFirst(sub.Name)
		p := b.paths[item+"/"+sub.Name]
		p.Parameters = one.Parameters
		if sr.has("get") {
			p.Get = b.op("read"+on+ns+name, "get", sr.GVK, sobj, 200)
		}
		if sr.has("create") {
			p.Post = b.op("create"+on+ns+name, "post", sr.GVK, sobj, 201, append([]spec.Parameter{bodyParam(sobj)}, write...)...)
		}
		if sr.has("update") {
			p.Put = b.op("replace"+on+ns+name, "put", sr.GVK, sobj, 200, append([]spec.Parameter{bodyParam(sobj)}, write...)...)
		}
		if sr.has("patch") {
			o := b.op("patch"+on+ns+name, "patch", sr.GVK, sobj, 200, append([]spec.Parameter{bodyParam(patch)}, append(write, paramForce)...)...)
			o.Consumes = patchConsumes
			p.Patch = o
		}
		b.paths[item+"/"+sub.Name] = p
	}
}
