package serviceaccount_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/keyutil"

	"github.com/kite-project/kite/apiserver/authn/serviceaccount"
)

var sa = &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "ns", UID: "sa-uid"}}

// getSA answers the one ServiceAccount.
func getSA(_ context.Context, resource, namespace, name string) (runtime.Object, error) {
	return sa, nil
}

func writeKey(t *testing.T, key any, public bool) string {
	t.Helper()
	var data []byte
	var err error
	if public {
		var der []byte
		if der, err = x509.MarshalPKIXPublicKey(key); err == nil {
			data = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		}
	} else {
		data, err = keyutil.MarshalPrivateKeyToPEM(key)
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func tokensFrom(t *testing.T, signing string, verifying ...string) *serviceaccount.Tokens {
	t.Helper()
	keys, err := serviceaccount.LoadKeys(signing, verifying)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := serviceaccount.New(serviceaccount.Options{Issuer: serviceaccount.DefaultIssuer, Keys: keys, Get: getSA})
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// TestKeyRotation: a token of the previous signing key keeps verifying
// while that key is given as a verifying key (--service-account-key-file),
// and stops when it is not; RSA and ECDSA keys both sign.
func TestKeyRotation(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	oldKey, newKey := writeKey(t, rsaKey, false), writeKey(t, ecKey, false)
	oldPub := writeKey(t, &rsaKey.PublicKey, true)

	old := tokensFrom(t, oldKey)
	tok, err := old.Generate(sa, serviceaccount.Bound{}, time.Now(), 600, []string{serviceaccount.DefaultIssuer})
	if err != nil {
		t.Fatal(err)
	}
	if header := strings.Split(tok, ".")[0]; !strings.Contains(decode(t, header), `"alg":"RS256"`) {
		t.Errorf("RSA token header %s", decode(t, header))
	}
	for _, tc := range []struct {
		name   string
		tokens *serviceaccount.Tokens
		want   bool
	}{
		{"the old key itself", old, true},
		{"new key with the old one verifying", tokensFrom(t, newKey, oldPub), true},
		{"new key with the old private key file verifying", tokensFrom(t, newKey, oldKey), true},
		{"new key alone", tokensFrom(t, newKey), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok, err := tc.tokens.AuthenticateToken(context.Background(), tok)
			if ok != tc.want {
				t.Fatalf("ok %v (err %v), want %v", ok, err, tc.want)
			}
			if ok && resp.User.GetName() != "system:serviceaccount:ns:sa" {
				t.Errorf("user %q", resp.User.GetName())
			}
			if !ok && err == nil {
				t.Error("a token of our issuer that does not verify must be an error, not someone else's")
			}
		})
	}
}

func TestLoadKeysRefusesBadFiles(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("not a key"), 0o600)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good := writeKey(t, ecKey, false)
	for _, tc := range []struct {
		name      string
		signing   string
		verifying []string
	}{
		{"missing signing key", filepath.Join(t.TempDir(), "none"), nil},
		{"signing key not a key", bad, nil},
		{"public key as signing key", writeKey(t, &ecKey.PublicKey, true), nil},
		{"verifying key not a key", good, []string{bad}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := serviceaccount.LoadKeys(tc.signing, tc.verifying); err == nil {
				t.Error("LoadKeys accepted it")
			}
		})
	}
}
