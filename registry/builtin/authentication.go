package builtin

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/kite-project/kite/registry"
)

// TokenIssuer answers TokenRequests: Kite's is
// apiserver/authn/serviceaccount.Tokens. The registry checks the request
// and finds the ServiceAccount; the issuer reads the bound object, signs
// and fills the status.
type TokenIssuer interface {
	// Audiences are a request's audiences when it names none (the API
	// server's: the issuer).
	Audiences() authenticator.Audiences
	// IssueToken signs a token for sa as req asks and fills req.Status;
	// its errors are API errors.
	IssueToken(ctx context.Context, sa *v1.ServiceAccount, req *authenticationv1.TokenRequest) error
}

// TokenReviewer authenticates a token for a TokenReview: Kite's is
// apiserver/authn.Authenticator.
type TokenReviewer interface {
	// ReviewToken authenticates token for audiences (the API's when
	// empty).
	ReviewToken(ctx context.Context, token string, audiences []string) (*authenticator.Response, bool, error)
	// APIAudiences are the API's audiences.
	APIAudiences() []string
}

// Authentication connects the authentication resources to the
// authenticator above the registry. A nil field makes its resource answer
// 503 (tests that build the strategies alone).
type Authentication struct {
	Tokens   TokenIssuer
	Reviewer TokenReviewer
}

// Option changes what All builds.
type Option func(*options)

type options struct {
	auth       Authentication
	components map[string]ComponentCheck // componentstatuses.go
}

// WithAuthentication gives serviceaccounts/token and tokenreviews their
// issuer and reviewer.
func WithAuthentication(a Authentication) Option { return func(o *options) { o.auth = a } }

func authnNotConfigured(what string) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("%s is not configured on this server", what))
}

// serviceAccountToken is the serviceaccounts/token subresource
// (TokenRequest), upstream's TokenREST: the body's name and namespace
// must match the URL's, the ServiceAccount must exist (and have the UID
// the body names), audiences default to the API's, expirationSeconds to
// an hour (at least 10 minutes).
func serviceAccountToken(tokens TokenIssuer) *registry.Subresource {
	return &registry.Subresource{
		Kind:           authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"),
		New:            func() runtime.Object { return &authenticationv1.TokenRequest{} },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList { return nil },
		Create: func(ctx context.Context, store *registry.Store, namespace, name string, body runtime.Object, _ *metav1.CreateOptions) (runtime.Object, error) {
			req, ok := body.(*authenticationv1.TokenRequest)
			if !ok {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", body))
			}
			if tokens == nil {
				return nil, authnNotConfigured("serviceaccounts/token")
			}
			gk := schema.GroupKind{Group: authenticationv1.GroupName, Kind: "TokenRequest"}
			if req.Name != "" && req.Name != name {
				return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata").Child("name"), req.Name, "must match the service account name if specified")})
			}
			if req.Namespace != "" && req.Namespace != namespace {
				return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata").Child("namespace"), req.Namespace, "must match the service account namespace if specified")})
			}
			obj, err := store.Get(ctx, namespace, name, &metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			sa := obj.(*v1.ServiceAccount)
			if req.UID != "" && req.UID != sa.UID {
				return nil, apierrors.NewConflict(schema.GroupResource{Group: gk.Group, Resource: gk.Kind}, name,
					fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
			}
			if len(req.Spec.Audiences) == 0 {
				req.Spec.Audiences = tokens.Audiences()
			}
			if req.Spec.ExpirationSeconds == nil {
				hour := int64(60 * 60)
				req.Spec.ExpirationSeconds = &hour
			}
			req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
			req.CreationTimestamp = metav1.NewTime(time.Now())
			req.Status = authenticationv1.TokenRequestStatus{}
			if errs := validateTokenRequest(req); len(errs) > 0 {
				return nil, apierrors.NewInvalid(gk, "", errs)
			}
			if err := tokens.IssueToken(ctx, sa, req); err != nil {
				return nil, err
			}
			return req, nil
		},
	}
}

// minTokenAgeSec is upstream's shortest TokenRequest lifetime.
const minTokenAgeSec = 10 * 60

// validateTokenRequest is upstream's ValidateTokenRequest for the bound
// objects Kite serves (no webhook configurations, hence no attestations).
func validateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	exp := *tr.Spec.ExpirationSeconds
	if exp < minTokenAgeSec {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
	}
	if exp > 1<<32 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}

// TokenReviews returns the strategy of authentication.k8s.io/v1
// tokenreviews, upstream's: the token is authenticated for the review's
// audiences (the API's when none) and the status says who it is.
func TokenReviews(reviewer TokenReviewer) *registry.Strategy {
	return &registry.Strategy{
		Kind:         authenticationv1.SchemeGroupVersion.WithKind("TokenReview"),
		Resource:     "tokenreviews",
		SingularName: "tokenreview",
		New:          func() runtime.Object { return &authenticationv1.TokenReview{} },
		Virtual: func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review := obj.(*authenticationv1.TokenReview)
			if review.Spec.Token == "" {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("token is required for TokenReview in %s", authenticationv1.SchemeGroupVersion))
			}
			if reviewer == nil {
				return nil, authnNotConfigured("tokenreviews")
			}
			auds := review.Spec.Audiences
			if len(auds) == 0 {
				auds = reviewer.APIAudiences()
			}
			resp, ok, err := reviewer.ReviewToken(ctx, review.Spec.Token, auds)
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: ok}
			if err != nil {
				review.Status.Error = err.Error()
			}
			if len(auds) > 0 && resp != nil && len(authenticator.Audiences(auds).Intersect(resp.Audiences)) == 0 {
				// As upstream: an authenticator that answered for other
				// audiences is a server fault.
				return nil, apierrors.NewInternalError(errors.New("error validating audience"))
			}
			if ok && resp != nil && resp.User != nil {
				review.Status.User = userInfo(resp.User.GetName(), resp.User.GetUID(), resp.User.GetGroups(), resp.User.GetExtra())
				review.Status.Audiences = resp.Audiences
			}
			return review, nil
		},
	}
}

// userInfo is an authentication.k8s.io/v1 UserInfo.
func userInfo(name, uid string, groups []string, extra map[string][]string) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: name, UID: uid, Groups: groups}
	for k, v := range extra {
		if info.Extra == nil {
			info.Extra = map[string]authenticationv1.ExtraValue{}
		}
		info.Extra[k] = v
	}
	return info
}

// withTokenRequest adds serviceaccounts/token to the ServiceAccounts
// strategy.
func withTokenRequest(s *registry.Strategy, tokens TokenIssuer) *registry.Strategy {
	if s.Subresources == nil {
		s.Subresources = map[string]*registry.Subresource{}
	}
	s.Subresources["token"] = serviceAccountToken(tokens)
	return s
}
