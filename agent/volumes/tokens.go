package volumes

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// maxTokenTTL is upstream's token manager's maxTTL: a token older than a
// day is refreshed whatever its expiry says.
const maxTokenTTL = 24 * time.Hour

// tokenKey names one token of one pod: what its TokenRequest asks.
type tokenKey struct {
	uid            types.UID
	serviceAccount string
	audience       string
	expiration     int64
}

// boundToken is a token the API issued and when.
type boundToken struct {
	token             string
	issued, expiresAt time.Time
}

// tokenRequiresRefresh is upstream's (pkg/kubelet/token) decision: a
// token is asked for again once 80 % of its life has passed, once it is a
// day old, or once it has expired.
func tokenRequiresRefresh(now time.Time, t boundToken) bool {
	if !now.Before(t.expiresAt) {
		return true
	}
	life := t.expiresAt.Sub(t.issued)
	if now.After(t.issued.Add(maxTokenTTL)) {
		return true
	}
	return !now.Before(t.issued.Add(life * 8 / 10))
}

// tokens asks the API for the ServiceAccount tokens of pods' projected
// volumes (TokenRequest, bound to the pod: it dies with it) and keeps
// each until it needs a refresh.
type tokens struct {
	client corev1client.ServiceAccountsGetter
	now    func() time.Time
	mu     sync.Mutex
	byKey  map[tokenKey]boundToken
}

// get returns the token src asks for pod, asking the API for a new one
// when there is none or the one there is needs a refresh.
func (t *tokens) get(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) ([]byte, error) {
	exp := int64(3600) // the API's default, as upstream's projection defaulting
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	key := tokenKey{uid: pod.UID, serviceAccount: pod.Spec.ServiceAccountName, audience: src.Audience, expiration: exp}
	t.mu.Lock()
	cur, ok := t.byKey[key]
	t.mu.Unlock()
	if ok && !tokenRequiresRefresh(t.now(), cur) {
		return []byte(cur.token), nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := t.client.ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to fetch token: %w", err)
	}
	expires := tr.Status.ExpirationTimestamp.Time
	life := time.Duration(exp) * time.Second
	if tr.Spec.ExpirationSeconds != nil {
		life = time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	}
	t.mu.Lock()
	t.byKey[key] = boundToken{token: tr.Status.Token, issued: expires.Add(-life), expiresAt: expires}
	t.mu.Unlock()
	return []byte(tr.Status.Token), nil
}

// forget drops the tokens of pod uid.
func (t *tokens) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.byKey {
		if k.uid == uid {
			delete(t.byKey, k)
		}
	}
}
