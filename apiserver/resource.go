package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/warning"

	"github.com/kite-project/kite/apiserver/metrics"
	"github.com/kite-project/kite/registry"
)

// call is one request to a resource, as routing resolved it.
type call struct {
	w     http.ResponseWriter
	r     *http.Request
	info  requestInfo
	store *registry.Store
	sub   *registry.Subresource
	out   output
	// warnings go out as Warning headers.
	warnings []string
}

func (c *call) ctx() context.Context { return c.r.Context() }

// warningsOf records a request's warnings into its call.
type warningsOf struct{ c *call }

func (w warningsOf) AddWarning(_, text string) { w.c.warnings = append(w.c.warnings, text) }

func (c *call) strategy() *registry.Strategy { return c.store.Strategy() }

// serveResource resolves the resource and dispatches by verb.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	store := s.set.Load().routes[info.GroupVersion][info.Resource]
	if store == nil {
		s.writeError(w, r, notFoundPath(r.URL.Path))
		return
	}
	strat := store.Strategy()
	if (info.Namespace != "" && !strat.Namespaced) || (strat.Namespaced && info.Namespace == "" && info.Name != "") {
		s.writeError(w, r, notFoundPath(r.URL.Path))
		return
	}
	if info.Subresource != "" && s.opts.Connect != nil && s.opts.Connect.Handles(info.Resource, info.Subresource) {
		// Upstream's ConnectResource refuses dryRun: a stream cannot be
		// half-run (pods/log is a read, not a connect, and ignores it).
		if !connectAllows(info.GroupVersion.Group, info.Resource, info.Subresource, verb(r, info)) {
			s.writeError(w, r, methodNotAllowed(r.Method, info))
			return
		}
		if _, dry := r.URL.Query()["dryRun"]; dry && info.Subresource != "log" {
			s.writeError(w, r, apierrors.NewBadRequest("dryRun is not supported"))
			return
		}
		if err := admitConnect(r, store, info); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.opts.Connect.Serve(w, r, info.Resource, info.Namespace, info.Name, info.Subresource, info.ProxyPath); err != nil {
			s.writeError(w, r, err)
		}
		return
	}
	c := &call{w: w, r: r, info: info, store: store, warnings: slices.Clone(strat.Warnings)}
	// Warnings the registry adds (e.g. pruned unknown fields) go out as
	// Warning headers with the response.
	c.r = r.WithContext(warning.WithWarningRecorder(r.Context(), warningsOf{c}))
	if info.Subresource != "" {
		c.sub = strat.Subresources[info.Subresource]
		if c.sub == nil {
			s.writeError(w, r, notFoundPath(r.URL.Path))
			return
		}
	}
	v := verb(r, info)
	if !allowed(v, info, strat, c.sub) {
		s.writeError(w, r, methodNotAllowed(r.Method, info))
		return
	}
	custom := isCustom(strat)
	allow := negotiation{table: v == "get" || v == "list" || v == "watch", noProtobuf: custom && (c.sub == nil || c.sub.Kind.Empty())}
	switch v {
	case "get", "watch":
		allow.partial = "PartialObjectMetadata"
	case "list":
		allow.partial = "PartialObjectMetadataList"
	}
	out, err := s.negotiate(r, allow)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c.out = out
	if v != "watch" {
		// Every request but a watch ends within its timeout (kubectl's
		// --request-timeout sends it), 60 s by default as upstream.
		timeout := DefaultRequestTimeout
		if q := r.URL.Query().Get("timeout"); q != "" {
			d, err := time.ParseDuration(q)
			if err != nil || d <= 0 {
				s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout %q: %v", q, err)))
				return
			}
			timeout = min(d, DefaultRequestTimeout)
		}
		ctx, cancel := context.WithTimeout(c.r.Context(), timeout)
		defer cancel()
		c.r = c.r.WithContext(ctx)
	}
	if s.opts.Metrics == nil {
		s.dispatch(c, v)
		return
	}
	s.opts.Metrics.Instrument(metrics.Request{
		Verb: v, Group: info.GroupVersion.Group, Version: info.GroupVersion.Version,
		Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name,
	}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.w = w
		s.dispatch(c, v)
	})).ServeHTTP(w, c.r)
}

// requestTimedOut is upstream's answer to a request that outlives its
// timeout (504).
func requestTimedOut() error {
	return apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
}

// isCustom reports a resource served as unstructured objects (custom
// resources), which have no protobuf form.
func isCustom(strat *registry.Strategy) bool {
	_, ok := strat.New().(runtime.Unstructured)
	return ok
}

// DefaultRequestTimeout bounds every request but watches, as
// kube-apiserver's --request-timeout.
const DefaultRequestTimeout = 60 * time.Second

// dispatch runs the verb's handler and writes its error, if any.
func (s *Server) dispatch(c *call, v string) {
	var err error
	switch v {
	case "get":
		err = s.get(c)
	case "list", "watch":
		err = s.list(c)
	case "create":
		err = s.create(c)
	case "update":
		err = s.update(c)
	case "patch":
		err = s.patch(c)
	case "delete":
		err = s.delete(c)
	case "deletecollection":
		err = s.deleteCollection(c)
	}
	if err != nil {
		if errors.Is(c.r.Context().Err(), context.DeadlineExceeded) {
			err = requestTimedOut()
		}
		s.writeWarnings(c)
		s.writeError(c.w, c.r, err)
	}
}

// allowed says whether the resource or subresource serves the verb (as
// its Verbs say, which discovery and OpenAPI list too) and the verb
// applies to the path's shape: creates go to collections (or to a POST
// subresource such as binding), updates and patches to objects.
func allowed(v string, info requestInfo, strat *registry.Strategy, sub *registry.Subresource) bool {
	verbs := strat.Verbs()
	if sub != nil {
		verbs = sub.Verbs()
	}
	switch {
	case !registry.Serves(verbs, v):
		return false
	case sub != nil:
		return true
	case v == "create":
		return info.Name == ""
	case v == "update" || v == "patch":
		return info.Name != ""
	}
	return true
}

func methodNotAllowed(method string, info requestInfo) error {
	err := apierrors.NewMethodNotSupported(schema.GroupResource{Group: info.GroupVersion.Group, Resource: info.Resource}, strings.ToLower(method))
	err.ErrStatus.Message = "the server does not allow this method on the requested resource"
	return err
}

// result writes an object or list, as a Table when the client asked.
func (s *Server) result(c *call, code int, obj runtime.Object) error {
	s.writeWarnings(c)
	gv := c.strategy().Kind.GroupVersion()
	if c.sub != nil && !c.sub.Kind.Empty() {
		gv = c.sub.Kind.GroupVersion()
	}
	if c.out.partial != "" {
		if _, isStatus := obj.(*metav1.Status); !isStatus {
			partial, err := asPartial(obj)
			if err != nil {
				return err
			}
			s.writeObject(c.w, c.r, code, c.out, metav1.SchemeGroupVersion, partial)
			return nil
		}
	}
	if c.out.table != nil {
		if _, isStatus := obj.(*metav1.Status); !isStatus {
			q := c.r.URL.Query()
			include := metav1.IncludeObjectPolicy(q.Get("includeObject"))
			table, err := s.opts.Tables(obj, include, false, *c.out.table)
			if err != nil {
				return err
			}
			s.writeObject(c.w, c.r, code, c.out, *c.out.table, table)
			return nil
		}
	}
	s.writeObject(c.w, c.r, code, c.out, gv, obj)
	return nil
}

func (s *Server) writeWarnings(c *call) {
	for _, w := range c.warnings {
		c.w.Header().Add("Warning", fmt.Sprintf("299 - %q", w))
	}
	c.warnings = nil
}

func (s *Server) get(c *call) error {
	var opts metav1.GetOptions
	if err := decodeParams(c.r, &opts); err != nil {
		return err
	}
	obj, err := c.store.GetSubresource(c.ctx(), c.info.Namespace, c.info.Name, c.info.Subresource, &opts)
	if err != nil {
		return err
	}
	return s.result(c, http.StatusOK, obj)
}

// listOptions reads, defaults and validates a list or watch request's
// options as upstream does (WatchList enabled).
func listOptions(c *call) (*metainternalversion.ListOptions, error) {
	opts := &metainternalversion.ListOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(c.r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if c.info.Watch {
		opts.Watch = true
	}
	if c.info.Name != "" {
		// A list or watch of a named path selects that name.
		nameSelector := fields.OneTermEqualSelector("metadata.name", c.info.Name)
		// As upstream: a selector that already requires the name is kept
		// as it is, not given the term twice.
		if opts.FieldSelector == nil || opts.FieldSelector.Empty() {
			opts.FieldSelector = nameSelector
		} else if v, found := opts.FieldSelector.RequiresExactMatch("metadata.name"); !found {
			opts.FieldSelector = fields.AndSelectors(opts.FieldSelector, nameSelector)
		} else if v != c.info.Name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector metadata.name doesn't match requested name: %q != %q", v, c.info.Name))
		}
	}
	metainternalversion.SetListOptionsDefaults(opts, true)
	if errs := metainternalversionvalidation.ValidateListOptions(opts, true); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return opts, nil
}

func (s *Server) create(c *call) error {
	var opts metav1.CreateOptions
	if err := decodeParams(c.r, &opts); err != nil {
		return err
	}
	if err := validateWriteOptions("CreateOptions", opts.DryRun, opts.FieldValidation); err != nil {
		return err
	}
	if opts.FieldManager == "" {
		opts.FieldManager = managerFromUserAgent(c.r)
	}
	if c.sub != nil {
		body, err := s.decodeBody(c, c.sub.New(), c.sub.Kind, opts.FieldValidation)
		if err != nil {
			return err
		}
		if err := checkURLNames(c, body, false); err != nil {
			return err
		}
		out, err := c.store.CreateSubresource(c.ctx(), c.info.Namespace, c.info.Name, c.info.Subresource, body, &opts)
		if err != nil {
			return err
		}
		return s.result(c, http.StatusCreated, out)
	}
	obj, err := s.decodeBody(c, c.strategy().New(), c.strategy().Kind, opts.FieldValidation)
	if err != nil {
		return err
	}
	out, err := c.store.Create(c.ctx(), c.info.Namespace, obj, &opts)
	if err != nil {
		return err
	}
	return s.result(c, http.StatusCreated, out)
}

func (s *Server) update(c *call) error {
	var opts metav1.UpdateOptions
	if err := decodeParams(c.r, &opts); err != nil {
		return err
	}
	if err := validateWriteOptions("UpdateOptions", opts.DryRun, opts.FieldValidation); err != nil {
		return err
	}
	if opts.FieldManager == "" {
		opts.FieldManager = managerFromUserAgent(c.r)
	}
	newBody, kind := c.strategy().New, c.strategy().Kind
	if c.sub != nil && c.sub.New != nil {
		newBody, kind = c.sub.New, c.sub.Kind // a view such as Scale
	}
	obj, err := s.decodeBody(c, newBody(), kind, opts.FieldValidation)
	if err != nil {
		return err
	}
	if err := checkURLNames(c, obj, true); err != nil {
		return err
	}
	out, created, err := c.store.Update(c.ctx(), &registry.UpdateRequest{
		Namespace:   c.info.Namespace,
		Name:        c.info.Name,
		Subresource: c.info.Subresource,
		Options:     opts,
		Object: func(context.Context, runtime.Object) (runtime.Object, error) {
			return obj.DeepCopyObject(), nil
		},
	})
	if err != nil {
		return err
	}
	return s.updated(c, out, created)
}

// checkURLNames refuses a body that names another object than the URL,
// before anything is looked up (a PUT to a missing name would otherwise
// be a 404), in upstream's order and words: the namespace first (an empty
// one is the URL's; a cluster-scoped object has none), then, when
// checkName, the name (which must be there).
func checkURLNames(c *call, obj runtime.Object, checkName bool) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object has no metadata: %v", err))
	}
	if m.GetNamespace() == "" || c.info.Namespace == "" {
		m.SetNamespace(c.info.Namespace)
	}
	switch {
	case !checkName:
		return urlNameMismatch(c.info, m.GetNamespace(), "")
	case m.GetName() == "":
		if err := urlNameMismatch(c.info, m.GetNamespace(), ""); err != nil {
			return err
		}
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", c.info.Name))
	}
	return urlNameMismatch(c.info, m.GetNamespace(), m.GetName())
}

// urlNameMismatch is upstream's 400 for a namespace or name (each checked
// when not empty) that is not the URL's.
func urlNameMismatch(info requestInfo, namespace, name string) error {
	switch {
	case namespace != "" && info.Namespace != "" && namespace != info.Namespace:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	case name != "" && name != info.Name:
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, info.Name))
	}
	return nil
}

// updated writes the result of an update or patch: 201 when it created
// the object, 200 otherwise.
func (s *Server) updated(c *call, out runtime.Object, created bool) error {
	if created {
		return s.result(c, http.StatusCreated, out)
	}
	return s.result(c, http.StatusOK, out)
}

func (s *Server) delete(c *call) error {
	opts, err := s.deleteOptions(c)
	if err != nil {
		return err
	}
	obj, deleted, err := c.store.Delete(c.ctx(), c.info.Namespace, c.info.Name, opts)
	if err != nil {
		return err
	}
	if deleted && !c.strategy().ReturnDeletedObject {
		details := &metav1.StatusDetails{Name: c.info.Name, Group: c.info.GroupVersion.Group, Kind: c.info.Resource}
		if m, ok := obj.(metav1.Object); ok {
			details.UID = m.GetUID()
		}
		return s.result(c, http.StatusOK, &metav1.Status{Status: metav1.StatusSuccess, Details: details})
	}
	return s.result(c, http.StatusOK, obj)
}

func (s *Server) deleteCollection(c *call) error {
	listOpts, err := listOptions(c)
	if err != nil {
		return err
	}
	opts, err := s.deleteOptions(c)
	if err != nil {
		return err
	}
	out, err := c.store.DeleteCollection(c.ctx(), c.info.Namespace, listOpts, opts)
	if err != nil {
		return err
	}
	return s.result(c, http.StatusOK, out)
}

// deleteOptions reads DeleteOptions from the body, or from the query when
// there is no body, as upstream does.
func (s *Server) deleteOptions(c *call) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := s.readBody(c)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		info, err := s.bodySerializer(c.r)
		if err != nil {
			return nil, err
		}
		defaultGVK := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		if _, _, err := info.Serializer.Decode(body, &defaultGVK, opts); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decode DeleteOptions: %v", err))
		}
	} else if err := decodeParams(c.r, opts); err != nil {
		return nil, err
	}
	// Upstream's checks: dryRun, a known propagationPolicy (not with
	// orphanDependents), ignoreStoreReadErrorWithClusterBreakingPotential
	// alone.
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

// decodeParams reads query parameters into a metav1 options object.
func decodeParams(r *http.Request, into runtime.Object) error {
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// validateWriteOptions checks dryRun and fieldValidation as upstream's
// options validation does (422 on unsupported values).
func validateWriteOptions(kind string, dryRun []string, fieldValidation string) error {
	var errs field.ErrorList
	for _, v := range dryRun {
		if v != metav1.DryRunAll {
			errs = append(errs, field.NotSupported(field.NewPath("dryRun"), dryRun, []string{metav1.DryRunAll}))
			break
		}
	}
	switch fieldValidation {
	case "", metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("fieldValidation"), fieldValidation,
			[]string{metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict}))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	return nil
}

// managerFromUserAgent is upstream's default field manager: the user
// agent up to its first "/", at most 128 characters.
func managerFromUserAgent(r *http.Request) string {
	ua := r.UserAgent()
	if i := strings.Index(ua, "/"); i >= 0 {
		ua = ua[:i]
	}
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}

// readBody reads the request body, refusing bodies over the limit with
// 413 as upstream does. The read ends with the request's timeout, so a
// client that sends its body slowly holds its request (and its in-flight
// slot) no longer than any other.
func (s *Server) readBody(c *call) ([]byte, error) {
	r := c.r
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if deadline, ok := r.Context().Deadline(); ok {
		http.NewResponseController(c.w).SetReadDeadline(deadline)
	}
	tooLarge := apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", s.maxBody))
	if r.ContentLength > s.maxBody {
		return nil, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.maxBody+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || r.Context().Err() != nil:
		return nil, requestTimedOut()
	case err != nil:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err))
	}
	if int64(len(body)) > s.maxBody {
		return nil, tooLarge
	}
	return body, nil
}

// decodeBody decodes the request body into into, which must come out as
// kind. Unknown and duplicate fields are refused (Strict), warned about
// (Warn, the default) or ignored, per fieldValidation.
func (s *Server) decodeBody(c *call, into runtime.Object, kind schema.GroupVersionKind, fieldValidation string) (runtime.Object, error) {
	body, err := s.readBody(c)
	if err != nil {
		return nil, err
	}
	info, err := s.bodySerializer(c.r)
	if err != nil {
		return nil, err
	}
	if info.MediaType == mediaProtobuf && isCustom(c.strategy()) && (c.sub == nil || c.sub.Kind.Empty()) {
		return nil, unsupportedMediaType(c.r.Header.Get("Content-Type"), []string{mediaJSON, mediaYAML})
	}
	if len(body) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	dec := info.Serializer
	if info.StrictSerializer != nil && fieldValidation != metav1.FieldValidationIgnore {
		dec = info.StrictSerializer
	}
	obj, gvk, err := dec.Decode(body, &kind, into)
	if err != nil {
		strictErr, isStrict := runtime.AsStrictDecodingError(err)
		switch {
		case !isStrict || obj == nil:
			return nil, apierrors.NewBadRequest(err.Error())
		case fieldValidation == metav1.FieldValidationStrict:
			return nil, apierrors.NewBadRequest(err.Error())
		default:
			for _, e := range strictErr.Errors() {
				c.warnings = append(c.warnings, e.Error())
			}
		}
	}
	if gvk != nil && gvk.GroupVersion() != kind.GroupVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), kind.GroupVersion()))
	}
	if (gvk != nil && gvk.Kind != kind.Kind) || obj != into {
		got := ""
		if gvk != nil {
			got = gvk.Kind
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", got, kind.Kind))
	}
	return obj, nil
}

// asPartial returns the metadata of an object (PartialObjectMetadata) or
// of every item of a list (PartialObjectMetadataList), for metadata-only
// clients such as client-go's metadata informers.
func asPartial(obj runtime.Object) (runtime.Object, error) {
	if !meta.IsListType(obj) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, notAcceptable([]string{mediaJSON, mediaProtobuf})
		}
		p := meta.AsPartialObjectMetadata(m)
		p.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
		return p, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList"))
	if lm, err := meta.ListAccessor(obj); err == nil {
		list.ResourceVersion = lm.GetResourceVersion()
		list.Continue = lm.GetContinue()
		list.RemainingItemCount = lm.GetRemainingItemCount()
	}
	list.Items = []metav1.PartialObjectMetadata{}
	err := meta.EachListItem(obj, func(item runtime.Object) error {
		m, err := meta.Accessor(item)
		if err != nil {
			return err
		}
		p := meta.AsPartialObjectMetadata(m)
		p.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
		list.Items = append(list.Items, *p)
		return nil
	})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return list, nil
}
