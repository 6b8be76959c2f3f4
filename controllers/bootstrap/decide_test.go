package bootstrap

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func token(id, secret string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.BootstrapTokenSecretPrefix + id, Namespace: metav1.NamespaceSystem},
		Type:       corev1.SecretType(bootstrapapi.SecretTypeBootstrapToken),
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:           []byte(id),
			bootstrapapi.BootstrapTokenSecretKey:       []byte(secret),
			bootstrapapi.BootstrapTokenUsageSigningKey: []byte("true"),
		},
	}
	for k, v := range data {
		if v == "" {
			delete(s.Data, k)
			continue
		}
		s.Data[k] = []byte(v)
	}
	return s
}

func clusterInfo(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic}, Data: data}
}

func sig(t *testing.T, content, id, secret string) string {
	t.Helper()
	s, err := jws.ComputeDetachedSignature(content, id, secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignKeepsOneSignaturePerSigningToken(t *testing.T) {
	const kc = "apiVersion: v1\nkind: Config\n"
	const a, as, b, bs = "aaaaaa", "0123456789abcdef", "bbbbbb", "fedcba9876543210"
	in := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	for _, tc := range []struct {
		name        string
		cm          map[string]string
		tokens      []*corev1.Secret
		wantChanged bool
		wantSigned  []string // token ids
		wantNext    time.Time
	}{
		{"a token signs", map[string]string{"kubeconfig": kc}, []*corev1.Secret{token(a, as, nil)}, true, []string{a}, time.Time{}},
		{"a signature already there is kept", map[string]string{"kubeconfig": kc, "jws-kubeconfig-" + a: sig(t, kc, a, as)}, []*corev1.Secret{token(a, as, nil)}, false, []string{a}, time.Time{}},
		{"a stale signature is redone", map[string]string{"kubeconfig": kc, "jws-kubeconfig-" + a: "stale"}, []*corev1.Secret{token(a, as, nil)}, true, []string{a}, time.Time{}},
		{"a signature of no token goes", map[string]string{"kubeconfig": kc, "jws-kubeconfig-" + b: "x"}, []*corev1.Secret{token(a, as, nil)}, true, []string{a}, time.Time{}},
		{"an expired token does not sign", map[string]string{"kubeconfig": kc}, []*corev1.Secret{token(a, as, map[string]string{bootstrapapi.BootstrapTokenExpirationKey: in(-time.Second)})}, false, nil, time.Time{}},
		{"an expiring token signs until its expiry", map[string]string{"kubeconfig": kc}, []*corev1.Secret{token(a, as, map[string]string{bootstrapapi.BootstrapTokenExpirationKey: in(time.Hour)}), token(b, bs, nil)}, true, []string{a, b}, now.Add(time.Hour)},
		{"a token without the signing usage does not sign", map[string]string{"kubeconfig": kc}, []*corev1.Secret{token(a, as, map[string]string{bootstrapapi.BootstrapTokenUsageSigningKey: "false"})}, false, nil, time.Time{}},
		{"a token whose id is not its name's does not sign", map[string]string{"kubeconfig": kc}, []*corev1.Secret{token(a, as, map[string]string{bootstrapapi.BootstrapTokenIDKey: b})}, false, nil, time.Time{}},
		{"no kubeconfig, nothing to sign", map[string]string{"other": "x"}, []*corev1.Secret{token(a, as, nil)}, false, nil, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, changed, next, err := Sign(clusterInfo(tc.cm), tc.tokens, now)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.wantChanged || !next.Equal(tc.wantNext) {
				t.Errorf("changed %v next %v, want %v %v", changed, next, tc.wantChanged, tc.wantNext)
			}
			sigs := 0
			for k := range want.Data {
				if len(k) > len(bootstrapapi.JWSSignatureKeyPrefix) && k[:len(bootstrapapi.JWSSignatureKeyPrefix)] == bootstrapapi.JWSSignatureKeyPrefix {
					sigs++
				}
			}
			if sigs != len(tc.wantSigned) {
				t.Errorf("signatures %v, want by %v", want.Data, tc.wantSigned)
			}
			secrets := map[string]string{a: as, b: bs}
			for _, id := range tc.wantSigned {
				if !jws.DetachedTokenIsValid(want.Data[bootstrapapi.JWSSignatureKeyPrefix+id], kc, id, secrets[id]) {
					t.Errorf("signature of %s does not verify: %v", id, want.Data)
				}
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	in := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	for _, tc := range []struct {
		name        string
		expiration  string
		wantExpired bool
		wantWait    time.Duration
	}{
		{"no expiration: kept, never looked at again", "", false, 0},
		{"expires later: looked at then", in(time.Minute), false, time.Minute},
		{"expired: deleted", in(-time.Second), true, 0},
		{"unparseable: deleted, as upstream", "tomorrow", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expired, wait := Expiry(token("aaaaaa", "0123456789abcdef", map[string]string{bootstrapapi.BootstrapTokenExpirationKey: tc.expiration}), now)
			if expired != tc.wantExpired || wait != tc.wantWait {
				t.Errorf("Expiry = %v, %v; want %v, %v", expired, wait, tc.wantExpired, tc.wantWait)
			}
		})
	}
}
