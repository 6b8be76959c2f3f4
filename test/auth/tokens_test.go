package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apiserver/authn/serviceaccount"
	"github.com/kite-project/kite/pki"
)

func requestToken(t *testing.T, ns, sa string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error) {
	t.Helper()
	return admin(t).CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
}

func pod(t *testing.T, ns, name, sa string) *v1.Pod {
	t.Helper()
	p, err := admin(t).CoreV1().Pods(ns).Create(t.Context(), &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.PodSpec{ServiceAccountName: sa, Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokenRequestTokenAuthenticatesAsItsServiceAccount: a token from
// serviceaccounts/token is the ServiceAccount's, with upstream's groups,
// its pod in the user's extra when bound to one, the issuer as audience
// and an hour of life by default.
func TestTokenRequestTokenAuthenticatesAsItsServiceAccount(t *testing.T) {
	ns, sa := namespace(t, "token-request")
	p := pod(t, ns, "p", "sa")
	for _, tc := range []struct {
		name      string
		spec      authenticationv1.TokenRequestSpec
		wantExtra map[string]authenticationv1.ExtraValue
	}{
		{"unbound", authenticationv1.TokenRequestSpec{}, nil},
		{"bound to a pod", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: p.UID}},
			map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"p"}, "authentication.kubernetes.io/pod-uid": {string(p.UID)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now()
			tr, err := requestToken(t, ns, "sa", tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tr.Spec.Audiences, []string{serviceaccount.DefaultIssuer}) || *tr.Spec.ExpirationSeconds != 3600 {
				t.Errorf("spec %+v, want the issuer as audience and 3600 s", tr.Spec)
			}
			if exp := tr.Status.ExpirationTimestamp.Time; exp.Before(before.Add(59*time.Minute)) || exp.After(time.Now().Add(61*time.Minute)) {
				t.Errorf("expires at %v, want in an hour", exp)
			}
			got, err := whoami(t.Context(), withToken(tr.Status.Token))
			if err != nil {
				t.Fatal(err)
			}
			wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, user.AllAuthenticated}
			if got.Username != "system:serviceaccount:"+ns+":sa" || got.UID != string(sa.UID) || !slices.Equal(got.Groups, wantGroups) {
				t.Errorf("user %q uid %q groups %q", got.Username, got.UID, got.Groups)
			}
			for k, v := range tc.wantExtra {
				if !slices.Equal(got.Extra[k], v) {
					t.Errorf("extra %s = %q, want %q", k, got.Extra[k], v)
				}
			}
			if id := got.Extra[user.CredentialIDKey]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
				t.Errorf("credential id %q, want the token's JTI", id)
			}
		})
	}
}

// TestTokenDiesWithItsObjects: a token bound to a pod or a secret stops
// authenticating once that object is deleted, and every token of a
// ServiceAccount once the ServiceAccount is deleted.
func TestTokenDiesWithItsObjects(t *testing.T) {
	ns, _ := namespace(t, "token-dies")
	cs := admin(t)
	secret, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := pod(t, ns, "p", "sa")
	bound := func(kind, name string) authenticationv1.TokenRequestSpec {
		return authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: kind, APIVersion: "v1", Name: name}}
	}
	for _, tc := range []struct {
		name   string
		spec   authenticationv1.TokenRequestSpec
		delete func() error
	}{
		// The pod has no node: its deletion is immediate, as upstream's.
		{"pod", bound("Pod", p.Name), func() error { return cs.CoreV1().Pods(ns).Delete(t.Context(), p.Name, metav1.DeleteOptions{}) }},
		{"secret", bound("Secret", secret.Name), func() error { return cs.CoreV1().Secrets(ns).Delete(t.Context(), secret.Name, metav1.DeleteOptions{}) }},
		{"service account", authenticationv1.TokenRequestSpec{}, func() error { return cs.CoreV1().ServiceAccounts(ns).Delete(t.Context(), "sa", metav1.DeleteOptions{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := requestToken(t, ns, "sa", tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := whoami(t.Context(), withToken(tr.Status.Token)); err != nil {
				t.Fatalf("before the delete: %v", err)
			}
			if err := tc.delete(); err != nil {
				t.Fatal(err)
			}
			// The check reads the watch cache, which hears of the delete
			// a moment after it is acknowledged.
			eventually(t, "the token is refused", func() bool {
				_, err := whoami(t.Context(), withToken(tr.Status.Token))
				return apierrors.IsUnauthorized(err)
			})
		})
	}
}

// TestBadTokensAreUnauthorized: forged, expired, tampered and
// wrong-audience tokens get 401, and TokenReview says they do not
// authenticate (but a review for the token's own audience says it does).
func TestBadTokensAreUnauthorized(t *testing.T) {
	ns, sa := namespace(t, "bad-tokens")
	signWith := func(keyFile string, now time.Time, exp int64) string {
		t.Helper()
		var keys *serviceaccount.Keys
		var err error
		if keyFile == "" {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			keys, err = serviceaccount.NewKeys(k)
		} else {
			keys, err = serviceaccount.LoadKeys(keyFile, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		tokens, err := serviceaccount.New(serviceaccount.Options{Issuer: serviceaccount.DefaultIssuer, Keys: keys,
			Get: func(context.Context, string, string, string) (runtime.Object, error) { return nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := tokens.Generate(sa, serviceaccount.Bound{}, now, exp, []string{serviceaccount.DefaultIssuer})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	serverKey := filepath.Join(shared.DataDir(), "pki", pki.ServiceAccountKeyFile)
	good, err := requestToken(t, ns, "sa", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	otherAudience, err := requestToken(t, ns, "sa", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good.Status.Token, ".")
	for _, tc := range []struct {
		name, token string
	}{
		{"forged: signed by another key", signWith("", time.Now(), 3600)},
		{"expired", signWith(serverKey, time.Now().Add(-2*time.Hour), 600)},
		{"not valid yet", signWith(serverKey, time.Now().Add(time.Hour), 600)},
		{"tampered payload", parts[0] + "." + strings.Split(signWith(serverKey, time.Now(), 7200), ".")[1] + "." + parts[2]},
		{"wrong audience", otherAudience.Status.Token},
		{"not a token at all", "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := whoami(t.Context(), withToken(tc.token)); !apierrors.IsUnauthorized(err) {
				t.Errorf("request: %v, want 401", err)
			}
			review, err := admin(t).AuthenticationV1().TokenReviews().Create(t.Context(),
				&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tc.token}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if review.Status.Authenticated || review.Status.Error == "" {
				t.Errorf("review status %+v, want unauthenticated with an error", review.Status)
			}
		})
	}
	t.Run("the signing key itself is good", func(t *testing.T) {
		if _, err := whoami(t.Context(), withToken(signWith(serverKey, time.Now(), 600))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("review for the token's own audience", func(t *testing.T) {
		review, err := admin(t).AuthenticationV1().TokenReviews().Create(t.Context(),
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: otherAudience.Status.Token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !review.Status.Authenticated || review.Status.User.Username != "system:serviceaccount:"+ns+":sa" || !slices.Equal(review.Status.Audiences, []string{"vault"}) {
			t.Errorf("review status %+v", review.Status)
		}
	})
	t.Run("review of a good token", func(t *testing.T) {
		review, err := admin(t).AuthenticationV1().TokenReviews().Create(t.Context(),
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: good.Status.Token}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !review.Status.Authenticated || review.Status.User.UID != string(sa.UID) || !slices.Contains(review.Status.User.Groups, user.AllAuthenticated) {
			t.Errorf("review status %+v", review.Status)
		}
	})
}

// TestTokenRequestRefusals: upstream's errors for what a TokenRequest
// may not ask.
func TestTokenRequestRefusals(t *testing.T) {
	ns, _ := namespace(t, "token-refusals")
	p := pod(t, ns, "p", "sa")
	other := pod(t, ns, "other", "default")
	for _, tc := range []struct {
		name    string
		sa      string
		spec    authenticationv1.TokenRequestSpec
		is      func(error) bool
		message string
	}{
		{"too short", "sa", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](60)}, apierrors.IsInvalid, "may not specify a duration less than 10 minutes"},
		{"no such service account", "nope", authenticationv1.TokenRequestSpec{}, apierrors.IsNotFound, `serviceaccounts "nope" not found`},
		{"no such pod", "sa", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "gone"}}, apierrors.IsNotFound, `pods "gone" not found`},
		{"pod of another service account", "sa", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: other.Name}}, apierrors.IsBadRequest,
			`cannot bind token for serviceaccount "sa" to pod running with different serviceaccount name.`},
		{"pod UID mismatch", "sa", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: "not-it"}}, apierrors.IsConflict,
			"the UID in the bound object reference (not-it) does not match the UID in record"},
		{"unsupported kind", "sa", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "x"}}, apierrors.IsBadRequest,
			"cannot bind token to object of type /v1, Kind=ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := requestToken(t, ns, tc.sa, tc.spec)
			if !tc.is(err) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %v, want one containing %q", err, tc.message)
			}
		})
	}
}

// TestTokenBindsToAPodCreatedAMomentAgo: a token bound to a pod can be
// requested as soon as the pod's create is acknowledged, before the watch
// cache has heard of it (upstream reads the bound object from etcd). CI
// once lost this race on TestTokenDiesWithItsObjects.
func TestTokenBindsToAPodCreatedAMomentAgo(t *testing.T) {
	ns, _ := namespace(t, "token-fresh-pod")
	for i := range 50 {
		p := pod(t, ns, fmt.Sprintf("p%d", i), "sa")
		tr, err := requestToken(t, ns, "sa", authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}})
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if _, err := whoami(t.Context(), withToken(tr.Status.Token)); err != nil {
			t.Fatalf("pod %d: the token does not authenticate: %v", i, err)
		}
	}
}
