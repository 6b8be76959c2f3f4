package auth_test

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestBootstrapTokens: a bootstrap token authenticates as
// system:bootstrap:<id> in system:bootstrappers and its extra groups
// while its Secret allows it and has not expired.
func TestBootstrapTokens(t *testing.T) {
	secret := func(id, tokenSecret string, data map[string]string) *v1.Secret {
		s := &v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
			Type:       "bootstrap.kubernetes.io/token",
			StringData: map[string]string{"token-id": id, "token-secret": tokenSecret, "usage-bootstrap-authentication": "true"},
		}
		for k, v := range data {
			s.StringData[k] = v
		}
		return s
	}
	future, past := time.Now().Add(time.Hour).UTC().Format(time.RFC3339), time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name       string
		secret     *v1.Secret
		token      string
		wantGroups []string // nil: 401
	}{
		{"valid, with extra groups", secret("abcdef", "0123456789abcdef", map[string]string{"expiration": future, "auth-extra-groups": "system:bootstrappers:kite:nodes"}),
			"abcdef.0123456789abcdef", []string{"system:bootstrappers", "system:bootstrappers:kite:nodes", user.AllAuthenticated}},
		{"valid, no expiration", secret("bcdefa", "0123456789abcdef", nil), "bcdefa.0123456789abcdef", []string{"system:bootstrappers", user.AllAuthenticated}},
		{"expired", secret("cdefab", "0123456789abcdef", map[string]string{"expiration": past}), "cdefab.0123456789abcdef", nil},
		{"wrong secret", secret("defabc", "0123456789abcdef", nil), "defabc.fedcba9876543210", nil},
		{"not for authentication", secret("efabcd", "0123456789abcdef", map[string]string{"usage-bootstrap-authentication": "false"}), "efabcd.0123456789abcdef", nil},
		{"wrong type", func() *v1.Secret {
			s := secret("fabcde", "0123456789abcdef", nil)
			s.Type = v1.SecretTypeOpaque
			return s
		}(), "fabcde.0123456789abcdef", nil},
		{"no secret", nil, "aaaaaa.0123456789abcdef", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.secret != nil {
				if _, err := admin(t).CoreV1().Secrets("kube-system").Create(t.Context(), tc.secret, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.secret != nil {
				// The authenticator reads the watch cache: wait until it
				// has the Secret, so that a refusal is the authenticator's.
				eventually(t, "the watch cache has the Secret", func() bool {
					_, err := admin(t).CoreV1().Secrets("kube-system").Get(t.Context(), tc.secret.Name, metav1.GetOptions{ResourceVersion: "0"})
					return err == nil
				})
			}
			info, err := whoami(t.Context(), withToken(tc.token))
			if tc.wantGroups == nil {
				if !apierrors.IsUnauthorized(err) {
					t.Fatalf("whoami: %+v, %v; want 401", info, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "system:bootstrap:" + tc.token[:6]; info.Username != want {
				t.Errorf("user %q, want %q", info.Username, want)
			}
			got := info.Groups
			if tc.wantGroups != nil && !slices.Equal(got, tc.wantGroups) {
				t.Errorf("groups %q, want %q", got, tc.wantGroups)
			}
		})
	}
}
