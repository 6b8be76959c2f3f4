package apiextensions

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/registry"
)

// Conversions makes the conversion webhooks' converters of CRDs whose
// spec.conversion.strategy is Webhook. One serves a whole server: its
// client manager keeps one REST client per client configuration, so
// connections to a webhook are kept alive and reused across CRD changes.
type Conversions struct {
	clients webhookutil.ClientManager
}

// NewConversions returns the converters' factory over a webhook client
// manager for ConversionReviews (registry/webhook.NewClientManager with
// ConversionReviewGroupVersions).
func NewConversions(clients webhookutil.ClientManager) *Conversions {
	return &Conversions{clients: clients}
}

// ConversionReviewGroupVersions are the ConversionReview versions and
// their schemes, for the client manager.
func ConversionReviewGroupVersions() ([]schema.GroupVersion, []func(*runtime.Scheme) error) {
	return []schema.GroupVersion{apiextensionsv1.SchemeGroupVersion, apiextensionsv1beta1.SchemeGroupVersion},
		[]func(*runtime.Scheme) error{apiextensionsv1.AddToScheme, apiextensionsv1beta1.AddToScheme}
}

// Converter returns the converter of crd's conversion webhook.
func (c *Conversions) Converter(crd *apiextensionsv1.CustomResourceDefinition) (*WebhookConverter, error) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return nil, fmt.Errorf("CRD %s has no conversion webhook", crd.Name)
	}
	client, err := c.clients.HookClient(webhookClientConfig(crd))
	if err != nil {
		return nil, fmt.Errorf("CRD %s: conversion webhook client: %w", crd.Name, err)
	}
	w := &WebhookConverter{client: client, reviewVersions: conv.Webhook.ConversionReviewVersions, versions: map[schema.GroupVersion]bool{}}
	for _, v := range crd.Spec.Versions {
		w.versions[schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}] = true
	}
	return w, nil
}

// webhookClientConfig is upstream's webhookClientConfigForCRD.
func webhookClientConfig(crd *apiextensionsv1.CustomResourceDefinition) webhookutil.ClientConfig {
	api := crd.Spec.Conversion.Webhook.ClientConfig
	caBundle := api.CABundle
	if len(caBundle) > 0 && len(bytes.TrimSpace(caBundle)) == 0 {
		caBundle = nil // whitespace only is no bundle, as upstream
	}
	cc := webhookutil.ClientConfig{Name: fmt.Sprintf("conversion_webhook_for_%s", crd.Name), CABundle: caBundle}
	if api.URL != nil {
		cc.URL = *api.URL
	}
	if s := api.Service; s != nil {
		cc.Service = &webhookutil.ClientConfigService{Name: s.Name, Namespace: s.Namespace, Port: 443}
		if s.Port != nil {
			cc.Service.Port = *s.Port
		}
		if s.Path != nil {
			cc.Service.Path = *s.Path
		}
	}
	return cc
}

// WebhookConverter converts custom resources through a CRD's conversion
// webhook as apiextensions-apiserver's webhookConverter does: a
// ConversionReview (v1 or v1beta1, the first of the CRD's
// conversionReviewVersions) with the objects not yet in the desired
// version; the response's uid (v1), result, object count, and each
// object's apiVersion, kind, name, namespace and uid are checked, and
// only labels and annotations may change in its metadata. Errors carry
// upstream's messages ("conversion webhook for <gvk> failed: ...").
type WebhookConverter struct {
	client         *rest.RESTClient
	reviewVersions []string
	versions       map[schema.GroupVersion]bool // the CRD's
}

// Convert returns objs converted to gv, in order. Objects already in gv
// are returned as they are and not sent; objs are not changed. subject
// names what is converted in errors (the object's or the list's kind, as
// upstream's messages name it).
func (w *WebhookConverter) Convert(ctx context.Context, objs []*unstructured.Unstructured, gv schema.GroupVersion, subject schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	if !w.versions[gv] {
		return nil, fmt.Errorf("request to convert CR to an invalid group/version: %s", gv)
	}
	out := make([]*unstructured.Unstructured, len(objs))
	var send []runtime.RawExtension
	var sent []int
	for i, obj := range objs {
		from := obj.GroupVersionKind().GroupVersion()
		if from == gv {
			out[i] = obj
			continue
		}
		if !w.versions[from] {
			if len(objs) > 1 {
				return nil, fmt.Errorf("request to convert CR list failed, list index %d has invalid group/version: %s", i, from)
			}
			return nil, fmt.Errorf("request to convert CR from an invalid group/version: %s", from)
		}
		send = append(send, runtime.RawExtension{Object: obj})
		sent = append(sent, i)
	}
	if len(send) == 0 {
		return out, nil
	}
	uid := types.UID(uuid.NewUUID())
	converted, err := w.call(ctx, send, gv, uid)
	if err != nil {
		return nil, fmt.Errorf("conversion webhook for %v failed: %w", subject, err)
	}
	if len(converted) != len(send) {
		return nil, fmt.Errorf("conversion webhook for %v returned %d objects, expected %d", subject, len(converted), len(send))
	}
	single := len(objs) == 1
	for n, raw := range converted {
		original := objs[sent[n]]
		obj, reason, indexed := checkConverted(original, raw, gv)
		switch {
		case reason == "":
		case !single:
			return nil, fmt.Errorf("conversion webhook for %v returned invalid converted object at index %v: %s", subject, n, reason)
		case indexed:
			return nil, fmt.Errorf("conversion webhook for %v returned invalid object at index 0: %s", subject, reason)
		default:
			return nil, fmt.Errorf("conversion webhook for %v returned invalid object: %s", subject, reason)
		}
		if err := restoreObjectMeta(original, obj); err != nil {
			if single {
				return nil, fmt.Errorf("conversion webhook for %v returned invalid metadata: %w", subject, err)
			}
			return nil, fmt.Errorf("conversion webhook for %v returned invalid metadata in object at index %v: %w", subject, n, err)
		}
		out[sent[n]] = obj
	}
	return out, nil
}

// checkConverted decodes one converted object and checks it against the
// original; reason is upstream's message when it fails, indexed whether
// upstream's single-object message names index 0 for it.
func checkConverted(original *unstructured.Unstructured, raw runtime.RawExtension, gv schema.GroupVersion) (_ *unstructured.Unstructured, reason string, indexed bool) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw.Raw); err != nil {
		return nil, err.Error(), false
	}
	if got := obj.GroupVersionKind().GroupVersion(); got != gv {
		return nil, fmt.Sprintf("invalid groupVersion (expected %v, received %v)", gv, got), true
	}
	if e, a := original.GetKind(), obj.GetKind(); e != a {
		return nil, fmt.Sprintf("invalid kind (expected %v, received %v)", e, a), true
	}
	if err := validateConvertedObject(original, obj); err != nil {
		return nil, err.Error(), false
	}
	return obj, "", false
}

// call sends one ConversionReview and returns the converted objects.
func (w *WebhookConverter) call(ctx context.Context, objs []runtime.RawExtension, gv schema.GroupVersion, uid types.UID) ([]runtime.RawExtension, error) {
	for _, version := range w.reviewVersions {
		switch version {
		case apiextensionsv1.SchemeGroupVersion.Version:
			req := &apiextensionsv1.ConversionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
				Request:  &apiextensionsv1.ConversionRequest{UID: uid, DesiredAPIVersion: gv.String(), Objects: objs},
			}
			resp := &apiextensionsv1.ConversionReview{}
			if err := w.client.Post().Body(req).Do(ctx).Into(resp); err != nil {
				return nil, err
			}
			if gvk := apiextensionsv1.SchemeGroupVersion.WithKind("ConversionReview"); resp.GroupVersionKind() != gvk {
				return nil, fmt.Errorf("expected webhook response of %v, got %v", gvk, resp.GroupVersionKind())
			}
			if resp.Response == nil {
				return nil, errors.New("no response provided")
			}
			if resp.Response.UID != uid {
				return nil, fmt.Errorf("expected response.uid=%q, got %q", uid, resp.Response.UID)
			}
			return resp.Response.ConvertedObjects, resultError(resp.Response.Result)
		case apiextensionsv1beta1.SchemeGroupVersion.Version:
			// v1beta1 never checked the kind or uid of the response;
			// upstream still does not, for compatibility.
			req := &apiextensionsv1beta1.ConversionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1beta1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
				Request:  &apiextensionsv1beta1.ConversionRequest{UID: uid, DesiredAPIVersion: gv.String(), Objects: objs},
			}
			resp := &apiextensionsv1beta1.ConversionReview{}
			if err := w.client.Post().Body(req).Do(ctx).Into(resp); err != nil {
				return nil, err
			}
			if resp.Response == nil {
				return nil, errors.New("no response provided")
			}
			return resp.Response.ConvertedObjects, resultError(resp.Response.Result)
		}
	}
	return nil, errors.New("no supported conversion review versions")
}

// resultError is the error of a response whose result is not Success.
func resultError(result metav1.Status) error {
	if result.Status == metav1.StatusSuccess {
		return nil
	}
	if result.Message != "" {
		return errors.New(result.Message)
	}
	return fmt.Errorf("response.result.status was '%s', not 'Success'", result.Status)
}

// validateConvertedObject is upstream's: the metadata that identifies an
// object must not change.
func validateConvertedObject(in, out *unstructured.Unstructured) error {
	if e, a := in.GetKind(), out.GetKind(); e != a {
		return fmt.Errorf("must have the same kind: %v != %v", e, a)
	}
	if e, a := in.GetName(), out.GetName(); e != a {
		return fmt.Errorf("must have the same name: %v != %v", e, a)
	}
	if e, a := in.GetNamespace(), out.GetNamespace(); e != a {
		return fmt.Errorf("must have the same namespace: %v != %v", e, a)
	}
	if e, a := in.GetUID(), out.GetUID(); e != a {
		return fmt.Errorf("must have the same UID: %v != %v", e, a)
	}
	return nil
}

// restoreObjectMeta is upstream's: the converted object gets the
// original's metadata, but for labels and annotations, which the webhook
// may change (and which are validated when it did).
func restoreObjectMeta(original, converted *unstructured.Unstructured) error {
	obj, found := converted.Object["metadata"]
	if !found {
		return errors.New("missing metadata in converted object")
	}
	responseMeta, ok := obj.(map[string]any)
	if !ok {
		return fmt.Errorf("invalid metadata of type %T in converted object", obj)
	}
	if _, ok := original.Object["metadata"]; !ok {
		converted.Object["metadata"] = map[string]any{}
	} else {
		converted.Object["metadata"] = runtime.DeepCopyJSONValue(original.Object["metadata"])
	}
	convertedMeta, ok := converted.Object["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("invalid metadata of type %T in input object", converted.Object["metadata"])
	}
	for _, fld := range []string{"labels", "annotations"} {
		obj, found := responseMeta[fld]
		if !found || obj == nil {
			delete(convertedMeta, fld)
			continue
		}
		responseField, ok := obj.(map[string]any)
		if !ok {
			return fmt.Errorf("invalid metadata.%s of type %T in converted object", fld, obj)
		}
		originalField, ok := convertedMeta[fld].(map[string]any)
		if !ok && convertedMeta[fld] != nil {
			return fmt.Errorf("invalid metadata.%s of type %T in original object", fld, convertedMeta[fld])
		}
		changed := len(originalField) != len(responseField)
		for k, v := range responseField {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("metadata.%s[%s] must be a string, but is %T in converted object", fld, k, v)
			}
			if originalField[k] != v {
				changed = true
			}
		}
		if changed {
			strs := make(map[string]string, len(responseField))
			for k, v := range responseField {
				strs[k] = v.(string)
			}
			var errs field.ErrorList
			if fld == "labels" {
				errs = metav1validation.ValidateLabels(strs, field.NewPath("metadata", "labels"))
			} else {
				errs = apivalidation.ValidateAnnotations(strs, field.NewPath("metadata", "annotation"))
			}
			if len(errs) > 0 {
				return errs.ToAggregate()
			}
		}
		convertedMeta[fld] = responseField
	}
	return nil
}

// WebhookConversion is how one served version of a CRD with a conversion
// webhook reads and writes the CRD's stored objects (any of its versions,
// as they were written): objects are converted to the served version on
// every read, list and watch event (a list or a burst of events in one
// ConversionReview), then pruned and defaulted with the version's
// schema, and converted to the storage version on every write. A failed
// conversion is upstream's 500 ("Internal error occurred: conversion
// webhook for ... failed: ...").
func WebhookConversion(crd *apiextensionsv1.CustomResourceDefinition, served string, strat *registry.Strategy, conv *WebhookConverter) *registry.Conversion {
	storage := schema.GroupVersion{Group: crd.Spec.Group, Version: storedVersion(crd)}
	listKind := strat.Kind.GroupVersion().WithKind(crd.Status.AcceptedNames.ListKind)
	b := &webhookBatch{conv: conv, served: strat.Kind, listKind: listKind, storage: storage, defaults: strat.Default}
	return &registry.Conversion{NewStored: strat.New, NewStoredList: strat.NewList, Batch: b}
}

// storedVersion is the name of crd's storage version.
func storedVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

type webhookBatch struct {
	conv     *WebhookConverter
	served   schema.GroupVersionKind
	listKind schema.GroupVersionKind
	storage  schema.GroupVersion
	defaults func(runtime.Object)
}

var _ registry.BatchConverter = (*webhookBatch)(nil)

func (b *webhookBatch) ToStored(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("convert %T: not a custom resource", obj)
	}
	out, err := b.conv.Convert(ctx, []*unstructured.Unstructured{u}, b.storage, u.GroupVersionKind())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if out[0] == u {
		return u.DeepCopy(), nil
	}
	return out[0], nil
}

func (b *webhookBatch) FromStored(ctx context.Context, stored []runtime.Object) ([]runtime.Object, error) {
	objs := make([]*unstructured.Unstructured, 0, len(stored))
	var idx []int
	out := make([]runtime.Object, len(stored))
	for i, s := range stored {
		u, ok := s.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("convert %T: not a custom resource", s)
		}
		if u.GetName() == "" {
			// A bookmark (only a resourceVersion): nothing to convert.
			c := u.DeepCopy()
			c.SetGroupVersionKind(b.served)
			out[i] = c
			continue
		}
		objs = append(objs, u)
		idx = append(idx, i)
	}
	if len(objs) == 0 {
		return out, nil
	}
	subject := b.listKind
	if len(objs) == 1 {
		subject = objs[0].GroupVersionKind()
	}
	converted, err := b.conv.Convert(ctx, objs, b.served.GroupVersion(), subject)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	for n, c := range converted {
		if c == objs[n] {
			c = c.DeepCopy()
		}
		if b.defaults != nil {
			b.defaults(c)
		}
		out[idx[n]] = c
	}
	return out, nil
}
