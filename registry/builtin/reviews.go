package builtin

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kite-project/kite/registry"
)

// Kite has one kind of user, the administrator: every authenticated
// request may do everything. The self reviews say so, so that
// "kubectl auth can-i" and "kubectl auth whoami" answer as they do for a
// cluster admin upstream.

// SelfSubjectAccessReviews returns the strategy of
// authorization.k8s.io/v1 selfsubjectaccessreviews: always allowed.
func SelfSubjectAccessReviews() *registry.Strategy {
	return &registry.Strategy{
		Kind:         authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"),
		Resource:     "selfsubjectaccessreviews",
		SingularName: "selfsubjectaccessreview",
		New:          func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
		Virtual: func(_ context.Context, obj runtime.Object) (runtime.Object, error) {
			review := obj.(*authorizationv1.SelfSubjectAccessReview)
			if review.Spec.ResourceAttributes == nil && review.Spec.NonResourceAttributes == nil {
				return nil, apierrors.NewBadRequest("exactly one of nonResourceAttributes or resourceAttributes must be specified")
			}
			review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true}
			return review, nil
		},
	}
}

// SelfSubjectRulesReviews returns the strategy of
// authorization.k8s.io/v1 selfsubjectrulesreviews: every verb on
// everything.
func SelfSubjectRulesReviews() *registry.Strategy {
	return &registry.Strategy{
		Kind:         authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"),
		Resource:     "selfsubjectrulesreviews",
		SingularName: "selfsubjectrulesreview",
		New:          func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
		Virtual: func(_ context.Context, obj runtime.Object) (runtime.Object, error) {
			review := obj.(*authorizationv1.SelfSubjectRulesReview)
			review.Status = authorizationv1.SubjectRulesReviewStatus{
				ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
				NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}
			return review, nil
		},
	}
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
