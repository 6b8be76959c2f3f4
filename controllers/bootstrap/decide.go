// Package bootstrap holds kube-controller-manager's two controllers of
// bootstrap tokens (pkg/controller/bootstrap): the bootstrap signer, which
// signs the cluster-info ConfigMap in kube-public with every bootstrap
// token allowed to sign (a detached JWS per token under
// jws-kubeconfig-<token-id>, which a joining node checks with its token
// before it trusts the CA in it, as kubeadm's token discovery does), and
// the token cleaner, which deletes bootstrap tokens once they expire.
package bootstrap

import (
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	bootstrapsecretutil "k8s.io/cluster-bootstrap/util/secrets"
)

// SigningToken is a bootstrap token that may sign, as upstream's
// validateSecretForSigning accepts it: a Secret named
// bootstrap-token-<id> with that token-id, a token-secret, usage
// usage-bootstrap-signing "true", not expired at now. expires is when it
// stops signing (zero: never).
func SigningToken(s *corev1.Secret, now time.Time) (id, secret string, expires time.Time, ok bool) {
	nameID, ok := bootstrapsecretutil.ParseName(s.Name)
	if !ok {
		return "", "", time.Time{}, false
	}
	id = bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenIDKey)
	secret = bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenSecretKey)
	if id == "" || id != nameID || secret == "" {
		return "", "", time.Time{}, false
	}
	left, expired := bootstrapsecretutil.GetExpiration(s, now)
	if expired || bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenUsageSigningKey) != "true" {
		return "", "", time.Time{}, false
	}
	if left > 0 {
		expires = now.Add(left)
	}
	return id, secret, expires, true
}

// Sign returns the ConfigMap cm should be, its kubeconfig signed by every
// signing token of secrets and no other signature, and whether that
// differs from cm; and when the signatures change next by a token's
// expiry (zero: never). A cm without the kubeconfig key is left alone, as
// upstream leaves it. Of two Secrets of one token id the first counts.
func Sign(cm *corev1.ConfigMap, secrets []*corev1.Secret, now time.Time) (want *corev1.ConfigMap, changed bool, next time.Time, err error) {
	content, ok := cm.Data[bootstrapapi.KubeConfigKey]
	if !ok {
		return cm, false, time.Time{}, nil
	}
	sigs := map[string]string{}
	for _, s := range secrets {
		id, secret, expires, ok := SigningToken(s, now)
		if !ok {
			continue
		}
		key := bootstrapapi.JWSSignatureKeyPrefix + id
		if _, dup := sigs[key]; dup {
			continue
		}
		sig, err := jws.ComputeDetachedSignature(content, id, secret)
		if err != nil {
			return nil, false, time.Time{}, fmt.Errorf("sign %s/%s with token %s: %w", cm.Namespace, cm.Name, id, err)
		}
		sigs[key] = sig
		if !expires.IsZero() && (next.IsZero() || expires.Before(next)) {
			next = expires
		}
	}
	have := map[string]string{}
	for k, v := range cm.Data {
		if strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix) {
			have[k] = v
		}
	}
	if maps.Equal(have, sigs) {
		return cm, false, next, nil
	}
	want = cm.DeepCopy()
	maps.DeleteFunc(want.Data, func(k, _ string) bool { return strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix) })
	maps.Copy(want.Data, sigs)
	return want, true, next, nil
}

// Expiry says what the token cleaner does with a bootstrap token Secret
// at now: delete it (expired), or look again after wait (0: never, it
// does not expire), as upstream's evalSecret.
func Expiry(s *corev1.Secret, now time.Time) (expired bool, wait time.Duration) {
	left, expired := bootstrapsecretutil.GetExpiration(s, now)
	if expired {
		return true, 0
	}
	return false, max(left, 0)
}
