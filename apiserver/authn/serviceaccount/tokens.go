package serviceaccount

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gopkg.in/go-jose/go-jose.v2/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	authenticationtokenjwt "k8s.io/apiserver/pkg/authentication/token/jwt"
	"k8s.io/klog/v2"
)

// DefaultIssuer is kube-apiserver's usual --service-account-issuer (and
// the default of Kite's).
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// GetFunc reads one object of a core/v1 resource ("serviceaccounts",
// "pods", "secrets", "nodes"; namespace "" for nodes). Errors are API
// errors (NotFound when it is gone). Kite's reads its stores at
// resourceVersion 0, that is from the watch caches, as upstream's
// validator reads informers: a token check costs no etcd round trip.
type GetFunc func(ctx context.Context, resource, namespace, name string) (runtime.Object, error)

// Options configure Tokens.
type Options struct {
	// Issuer is the iss claim of the tokens signed and the only one
	// accepted (--service-account-issuer). Required.
	Issuer string
	// Keys sign and verify. Required.
	Keys *Keys
	// Get reads the ServiceAccounts and the bound objects. Required.
	Get GetFunc
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Tokens signs, verifies and issues ServiceAccount tokens. It is safe for
// concurrent use.
type Tokens struct {
	opts Options
}

// New returns Tokens for opts.
func New(opts Options) (*Tokens, error) {
	switch {
	case opts.Issuer == "":
		return nil, errors.New("serviceaccount: Options.Issuer is required")
	case opts.Keys == nil:
		return nil, errors.New("serviceaccount: Options.Keys is required")
	case opts.Get == nil:
		return nil, errors.New("serviceaccount: Options.Get is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Tokens{opts: opts}, nil
}

// Issuer is the iss of the tokens.
func (t *Tokens) Issuer() string { return t.opts.Issuer }

// Audiences are the API server's audiences: the issuer, as upstream
// defaults --api-audiences to it. A TokenRequest without audiences gets
// them.
func (t *Tokens) Audiences() authenticator.Audiences { return authenticator.Audiences{t.opts.Issuer} }

// Generate signs a token for sa bound to bound, valid for
// expirationSeconds from now, for audiences.
func (t *Tokens) Generate(sa *v1.ServiceAccount, bound Bound, now time.Time, expirationSeconds int64, audiences []string) (string, error) {
	sc, pc := claims(sa, bound, now, expirationSeconds, audiences)
	tok, err := jwt.Signed(t.opts.Keys.signer).Claims(pc).Claims(sc).Claims(&jwt.Claims{Issuer: t.opts.Issuer}).CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("serviceaccount: signing a token for %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	return tok, nil
}

// IssueToken answers a TokenRequest for sa, already defaulted and
// validated (registry/builtin does that, as upstream's TokenREST does
// before it): it reads the bound object, checks it as upstream does, signs
// and fills req.Status. Errors are API errors.
func (t *Tokens) IssueToken(ctx context.Context, sa *v1.ServiceAccount, req *authenticationv1.TokenRequest) error {
	var bound Bound
	if ref := req.Spec.BoundObjectRef; ref != nil {
		var uid types.UID
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		switch {
		case gvk.Group == "" && gvk.Kind == "Pod":
			pod, err := getAs[*v1.Pod](ctx, t.opts.Get, "pods", sa.Namespace, ref.Name)
			if err != nil {
				return err
			}
			if sa.Name != pod.Spec.ServiceAccountName {
				return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa.Name))
			}
			bound.Pod, uid = pod, pod.UID
			if nodeName := pod.Spec.NodeName; nodeName != "" {
				node, err := getAs[*v1.Node](ctx, t.opts.Get, "nodes", "", nodeName)
				switch {
				case apierrors.IsNotFound(err):
					// As upstream: the node's name without its UID.
					bound.Node = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
				case err != nil:
					return apierrors.NewInternalError(err)
				default:
					bound.Node = node
				}
			}
		case gvk.Group == "" && gvk.Kind == "Node":
			node, err := getAs[*v1.Node](ctx, t.opts.Get, "nodes", "", ref.Name)
			if err != nil {
				return err
			}
			bound.Node, uid = node, node.UID
		case gvk.Group == "" && gvk.Kind == "Secret":
			secret, err := getAs[*v1.Secret](ctx, t.opts.Get, "secrets", sa.Namespace, ref.Name)
			if err != nil {
				return err
			}
			bound.Secret, uid = secret, secret.UID
		default:
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
		}
		if ref.UID != "" && uid != ref.UID {
			return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
		}
	}
	now := req.CreationTimestamp.Time
	if now.IsZero() {
		now = t.opts.Now()
	}
	exp := int64(3600)
	if req.Spec.ExpirationSeconds != nil {
		exp = *req.Spec.ExpirationSeconds
	}
	tok, err := t.Generate(sa, bound, now, exp, req.Spec.Audiences)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	req.Status = authenticationv1.TokenRequestStatus{
		Token:               tok,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(exp) * time.Second)),
	}
	return nil
}

func getAs[T runtime.Object](ctx context.Context, get GetFunc, resource, namespace, name string) (T, error) {
	var zero T
	obj, err := get(ctx, resource, namespace, name)
	if err != nil {
		return zero, err
	}
	typed, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("serviceaccount: %s %s/%s is a %T", resource, namespace, name, obj)
	}
	return typed, nil
}

var _ authenticator.Token = (*Tokens)(nil)

// AuthenticateToken is upstream's JWT token authenticator with its
// validator: a token of another issuer is not ours (no error, so the next
// authenticator may try); one of ours must verify with one of the keys,
// name audiences that meet the request's (the API audiences unless a
// TokenReview asked for others), be within its lifetime, and its
// ServiceAccount and bound objects must still exist with the same UIDs.
func (t *Tokens) AuthenticateToken(ctx context.Context, tokenData string) (*authenticator.Response, bool, error) {
	if !t.hasOurIssuer(tokenData) {
		return nil, false, nil
	}
	tok, err := jwt.ParseSigned(tokenData)
	if err != nil {
		return nil, false, nil
	}
	var kid string
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	public, private := &jwt.Claims{}, &privateClaims{}
	verified := false
	var errs []string
	for _, k := range t.opts.Keys.Public {
		if kid != "" && k.KeyID != kid {
			continue
		}
		if err := tok.Claims(k.Key, public, private); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		verified = true
		break
	}
	if !verified {
		if len(errs) == 0 {
			return nil, false, errors.New("invalid signature, no keys found")
		}
		return nil, false, errors.New(strings.Join(errs, ", "))
	}
	if public.Issuer != t.opts.Issuer {
		return nil, false, fmt.Errorf("token issuer %q is invalid", public.Issuer)
	}
	implicit := t.Audiences()
	tokenAuds := authenticator.Audiences(public.Audience)
	if len(tokenAuds) == 0 {
		tokenAuds = implicit // a legacy token: no audience means the API's
	}
	requested, ok := authenticator.AudiencesFrom(ctx)
	if !ok {
		requested = implicit
	}
	auds := tokenAuds.Intersect(requested)
	if len(auds) == 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", tokenAuds, requested)
	}
	info, err := t.validate(ctx, public, private)
	if err != nil {
		return nil, false, err
	}
	return &authenticator.Response{User: info.UserInfo(), Audiences: auds}, true, nil
}

// hasOurIssuer reads the unverified payload's iss, as upstream does, so
// that JWTs of other issuers (and non-JWTs) go to the next authenticator
// without an error.
func (t *Tokens) hasOurIssuer(tokenData string) bool {
	if strings.HasPrefix(strings.TrimSpace(tokenData), "{") {
		return false
	}
	parts := strings.Split(tokenData, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var c struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return false
	}
	return c.Issuer == t.opts.Issuer
}

// validate is upstream's validator: the lifetime (with go-jose's default
// leeway of a minute), then the ServiceAccount and each bound object by
// name and UID; an object deleted (deletionTimestamp) more than the
// leeway ago no longer backs tokens.
func (t *Tokens) validate(ctx context.Context, public *jwt.Claims, private *privateClaims) (*apiserverserviceaccount.ServiceAccountInfo, error) {
	now := t.opts.Now()
	switch err := public.Validate(jwt.Expected{Time: now}); err {
	case nil:
	case jwt.ErrExpired:
		return nil, errors.New("service account token has expired")
	case jwt.ErrNotValidYet:
		return nil, errors.New("service account token is not valid yet")
	case jwt.ErrIssuedInTheFuture:
		return nil, errors.New("service account token is issued in the future")
	default:
		return nil, fmt.Errorf("service account token claims could not be validated: %w", err)
	}
	deletedBefore := now.Add(-jwt.DefaultLeeway)
	k := private.Kubernetes
	ns := k.Namespace
	sa, err := getAs[*v1.ServiceAccount](ctx, t.opts.Get, "serviceaccounts", ns, k.Svcacct.Name)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Could not retrieve service account", "serviceAccount", klog.KRef(ns, k.Svcacct.Name), "err", err)
		return nil, err
	}
	if string(sa.UID) != k.Svcacct.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, k.Svcacct.UID)
	}
	if gone(sa, deletedBefore) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, k.Svcacct.Name)
	}
	if s := k.Secret; s != nil {
		if err := t.checkBound(ctx, "secrets", "secret", ns, s, deletedBefore); err != nil {
			return nil, err
		}
	}
	info := &apiserverserviceaccount.ServiceAccountInfo{Namespace: ns, Name: k.Svcacct.Name, UID: k.Svcacct.UID, CredentialID: authenticationtokenjwt.CredentialIDForJTI(public.ID)}
	if p := k.Pod; p != nil {
		if err := t.checkBound(ctx, "pods", "pod", ns, p, deletedBefore); err != nil {
			return nil, err
		}
		info.PodName, info.PodUID = p.Name, p.UID
	}
	if n := k.Node; n != nil {
		// A pod's node is information only; a token bound to a node
		// alone dies with it.
		if k.Pod == nil {
			if err := t.checkBound(ctx, "nodes", "node", "", n, deletedBefore); err != nil {
				return nil, err
			}
		}
		info.NodeName, info.NodeUID = n.Name, n.UID
	}
	return info, nil
}

// checkBound is upstream's check of a bound object: it must exist with the
// UID of the claim and not have been deleted before deletedBefore (the
// messages are upstream's: the token's holder learns no more than that).
func (t *Tokens) checkBound(ctx context.Context, resource, kind, namespace string, claim *ref, deletedBefore time.Time) error {
	obj, err := t.opts.Get(ctx, resource, namespace, claim.Name)
	if err != nil {
		return errors.New("service account token has been invalidated")
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("serviceaccount: %s %s: %w", resource, claim.Name, err)
	}
	if string(m.GetUID()) != claim.UID {
		return fmt.Errorf("%s UID (%s) does not match service account %s ref claim (%s)", kind, m.GetUID(), kind, claim.UID)
	}
	if gone(m, deletedBefore) {
		return errors.New("service account token has been invalidated")
	}
	return nil
}

// gone reports an object deleted before deletedBefore (upstream allows a
// leeway's worth of graceful deletion).
func gone(m metav1.Object, deletedBefore time.Time) bool {
	return m.GetDeletionTimestamp() != nil && m.GetDeletionTimestamp().Time.Before(deletedBefore)
}
