package builtin

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	authzvalidation "github.com/kite-project/kite/apis/authorization/validation"
	"github.com/kite-project/kite/registry"
)

// The access reviews ask the server's authorizer, which the API server
// puts in each request's context (WithAuthorization), as upstream's
// review storages ask theirs. Without one (a server built with no
// authorization) every authenticated request may do everything, and the
// reviews say so.

// SelfSubjectAccessReviews returns the strategy of
// authorization.k8s.io/v1 selfsubjectaccessreviews: may the requesting
// user do this?
func SelfSubjectAccessReviews() *registry.Strategy {
	return &registry.Strategy{
		Kind:         authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"),
		Resource:     "selfsubjectaccessreviews",
		SingularName: "selfsubjectaccessreview",
		New:          func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
		Virtual: func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review := obj.(*authorizationv1.SelfSubjectAccessReview)
			if errs := authzvalidation.ValidateSelfSubjectAccessReview(review); len(errs) > 0 {
				return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind(), "", errs)
			}
			u, ok := genericapirequest.UserFrom(ctx)
			if !ok {
				return nil, apierrors.NewBadRequest("no user present on request")
			}
			review.Status = accessReview(ctx, u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
			return review, nil
		},
	}
}

// SubjectAccessReviews returns the strategy of authorization.k8s.io/v1
// subjectaccessreviews: may the user of the spec do this?
func SubjectAccessReviews() *registry.Strategy {
	return &registry.Strategy{
		Kind:         authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"),
		Resource:     "subjectaccessreviews",
		SingularName: "subjectaccessreview",
		New:          func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
		Virtual: func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review := obj.(*authorizationv1.SubjectAccessReview)
			if errs := authzvalidation.ValidateSubjectAccessReview(review); len(errs) > 0 {
				return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind(), "", errs)
			}
			review.Status = accessReview(ctx, specUser(review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
			return review, nil
		},
	}
}

// LocalSubjectAccessReviews returns the strategy of
// authorization.k8s.io/v1 localsubjectaccessreviews: a
// SubjectAccessReview within one namespace, which its creator needs
// rights in alone.
func LocalSubjectAccessReviews() *registry.Strategy {
	return &registry.Strategy{
		Kind:         authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"),
		Resource:     "localsubjectaccessreviews",
		SingularName: "localsubjectaccessreview",
		Namespaced:   true,
		New:          func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
		Virtual: func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review := obj.(*authorizationv1.LocalSubjectAccessReview)
			if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
				if info.Namespace == "" {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is required on this type: %v", info.Namespace))
				}
				if review.Namespace == "" {
					review.Namespace = info.Namespace
				}
				if info.Namespace != review.Namespace {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", info.Namespace))
				}
			}
			if errs := authzvalidation.ValidateLocalSubjectAccessReview(review); len(errs) > 0 {
				return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind(), "", errs)
			}
			review.Status = accessReview(ctx, specUser(review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
			return review, nil
		},
	}
}

// SelfSubjectRulesReviews returns the strategy of
// authorization.k8s.io/v1 selfsubjectrulesreviews: what may the
// requesting user do in a namespace ("kubectl auth can-i --list")?
func SelfSubjectRulesReviews() *registry.Strategy {
	return &registry.Strategy{
		Kind:         authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"),
		Resource:     "selfsubjectrulesreviews",
		SingularName: "selfsubjectrulesreview",
		New:          func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
		Virtual: func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review := obj.(*authorizationv1.SelfSubjectRulesReview)
			u, ok := genericapirequest.UserFrom(ctx)
			if !ok {
				return nil, apierrors.NewBadRequest("no user present on request")
			}
			if review.Spec.Namespace == "" {
				return nil, apierrors.NewBadRequest("no namespace on request")
			}
			a, ok := AuthorizationFrom(ctx)
			if !ok {
				return &authorizationv1.SelfSubjectRulesReview{Status: authorizationv1.SubjectRulesReviewStatus{
					ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
					NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
				}}, nil
			}
			resourceInfo, nonResourceInfo, incomplete, err := a.RulesFor(ctx, u, review.Spec.Namespace)
			// Upstream answers a new review: status only.
			out := &authorizationv1.SelfSubjectRulesReview{Status: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules:    []authorizationv1.ResourceRule{},
				NonResourceRules: []authorizationv1.NonResourceRule{},
				Incomplete:       incomplete,
			}}
			for _, r := range resourceInfo {
				out.Status.ResourceRules = append(out.Status.ResourceRules, authorizationv1.ResourceRule{
					Verbs: r.GetVerbs(), APIGroups: r.GetAPIGroups(), Resources: r.GetResources(), ResourceNames: r.GetResourceNames()})
			}
			for _, r := range nonResourceInfo {
				out.Status.NonResourceRules = append(out.Status.NonResourceRules, authorizationv1.NonResourceRule{
					Verbs: r.GetVerbs(), NonResourceURLs: r.GetNonResourceURLs()})
			}
			if err != nil {
				out.Status.EvaluationError = err.Error()
			}
			return out, nil
		},
	}
}

// specUser is the user a SubjectAccessReview asks about.
func specUser(spec authorizationv1.SubjectAccessReviewSpec) user.Info {
	u := &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	for k, v := range spec.Extra {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[k] = v
	}
	return u
}

// accessReview asks the authorizer about u and the attributes, as
// upstream's review storages do.
func accessReview(ctx context.Context, u user.Info, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a, ok := AuthorizationFrom(ctx)
	if !ok {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true}
	}
	var attrs authorizer.AttributesRecord
	if ra != nil {
		attrs = resourceAttributesFrom(u, *ra)
	} else {
		attrs = authorizer.AttributesRecord{User: u, Verb: nra.Verb, Path: nra.Path}
	}
	decision, reason, err := a.Authorize(ctx, attrs)
	status := authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authorizer.DecisionAllow,
		Denied:  decision == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return status
}

// resourceAttributesFrom is upstream's ResourceAttributesFrom: the
// attributes of a review, with its selectors.
func resourceAttributesFrom(u user.Info, in authorizationv1.ResourceAttributes) authorizer.AttributesRecord {
	version := in.Version
	if version == "" {
		version = "*"
	}
	ret := authorizer.AttributesRecord{User: u, Verb: in.Verb, Namespace: in.Namespace, APIGroup: in.Group, APIVersion: version,
		Resource: in.Resource, Subresource: in.Subresource, Name: in.Name, ResourceRequest: true}
	if s := in.LabelSelector; s != nil {
		if s.RawSelector != "" {
			if sel, err := labels.Parse(s.RawSelector); err != nil {
				ret.LabelSelectorParsingErr = err
			} else {
				ret.LabelSelectorRequirements, _ = sel.Requirements()
			}
		}
		if len(s.Requirements) > 0 {
			ret.LabelSelectorRequirements, ret.LabelSelectorParsingErr = labelRequirements(s.Requirements)
		}
	}
	if s := in.FieldSelector; s != nil {
		if s.RawSelector != "" {
			if sel, err := fields.ParseSelector(s.RawSelector); err != nil {
				ret.FieldSelectorParsingErr = err
			} else {
				ret.FieldSelectorRequirements = sel.Requirements()
			}
		}
		if len(s.Requirements) > 0 {
			ret.FieldSelectorRequirements, ret.FieldSelectorParsingErr = fieldRequirements(s.Requirements)
		}
	}
	return ret
}

func labelRequirements(in []metav1.LabelSelectorRequirement) (labels.Requirements, error) {
	ops := map[metav1.LabelSelectorOperator]selection.Operator{
		metav1.LabelSelectorOpIn: selection.In, metav1.LabelSelectorOpNotIn: selection.NotIn,
		metav1.LabelSelectorOpExists: selection.Exists, metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	var reqs labels.Requirements
	var errs []error
	for _, e := range in {
		op, ok := ops[e.Operator]
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not a valid label selector operator", e.Operator))
			continue
		}
		values := e.Values
		if len(values) == 0 {
			values = nil
		}
		r, err := labels.NewRequirement(e.Key, op, values)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reqs = append(reqs, *r)
	}
	return reqs, utilerrors.NewAggregate(errs)
}

func fieldRequirements(in []metav1.FieldSelectorRequirement) (fields.Requirements, error) {
	var reqs fields.Requirements
	var errs []error
	for _, e := range in {
		if len(e.Values) > 1 {
			errs = append(errs, fmt.Errorf("fieldSelectors do not yet support multiple values"))
			continue
		}
		switch e.Operator {
		case metav1.FieldSelectorOpIn, metav1.FieldSelectorOpNotIn:
			if len(e.Values) != 1 {
				word := "in"
				if e.Operator == metav1.FieldSelectorOpNotIn {
					word = "not in"
				}
				errs = append(errs, fmt.Errorf("fieldSelectors %s must have one value", word))
				continue
			}
			op := selection.Equals
			if e.Operator == metav1.FieldSelectorOpNotIn {
				op = selection.NotEquals
			}
			reqs = append(reqs, fields.Requirement{Field: e.Key, Operator: op, Value: e.Values[0]})
		case metav1.FieldSelectorOpExists, metav1.FieldSelectorOpDoesNotExist:
			errs = append(errs, fmt.Errorf("fieldSelectors do not yet support %v", e.Operator))
		default:
			errs = append(errs, fmt.Errorf("%q is not a valid field selector operator", e.Operator))
		}
	}
	return reqs, utilerrors.NewAggregate(errs)
}

// SelfSubjectReviews returns the strategy of authentication.k8s.io/v1
// selfsubjectreviews: who the request authenticated as.
func SelfSubjectReviews() *registry.Strategy {
	return &registry.Strategy{
		Kind:         authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"),
		Resource:     "selfsubjectreviews",
		SingularName: "selfsubjectreview",
		New:          func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
		Virtual: func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review := obj.(*authenticationv1.SelfSubjectReview)
			user, ok := genericapirequest.UserFrom(ctx)
			if !ok {
				return nil, apierrors.NewInternalError(fmt.Errorf("no user in the request"))
			}
			review.Status = authenticationv1.SelfSubjectReviewStatus{
				UserInfo: userInfo(user.GetName(), user.GetUID(), user.GetGroups(), user.GetExtra()),
			}
			return review, nil
		},
	}
}
