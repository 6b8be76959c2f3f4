package authn

import (
	"context"
	"crypto/subtle"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecretutil "k8s.io/cluster-bootstrap/util/secrets"
	bootstraptokenutil "k8s.io/cluster-bootstrap/util/tokens"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/apiserver/authn/serviceaccount"
)

// BootstrapTokens is upstream's bootstrap token authenticator
// (plugin/pkg/auth/authenticator/token/bootstrap): a token "<id>.<secret>"
// authenticates as system:bootstrap:<id> in system:bootstrappers (and the
// secret's auth-extra-groups) while the Secret bootstrap-token-<id> of type
// bootstrap.kubernetes.io/token in kube-system holds that secret, allows
// authentication and has not expired.
type BootstrapTokens struct {
	get serviceaccount.GetFunc
	now func() time.Time
}

// NewBootstrapTokens reads the Secrets through get; now is the clock
// (time.Now when nil).
func NewBootstrapTokens(get serviceaccount.GetFunc, now func() time.Time) *BootstrapTokens {
	if now == nil {
		now = time.Now
	}
	return &BootstrapTokens{get: get, now: now}
}

var _ authenticator.Token = (*BootstrapTokens)(nil)

func (b *BootstrapTokens) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	tokenID, tokenSecret, err := bootstraptokenutil.ParseToken(token)
	if err != nil {
		return nil, false, nil // not a bootstrap token: the next authenticator's
	}
	name := bootstrapapi.BootstrapTokenSecretPrefix + tokenID
	obj, err := b.get(ctx, "secrets", "kube-system", name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	secret, ok := obj.(*v1.Secret)
	log := klog.FromContext(ctx).V(3)
	switch {
	case !ok:
		return nil, false, nil
	case secret.DeletionTimestamp != nil:
		log.Info("Bootstrap secret matching bearer token is deleted and awaiting removal", "secret", klog.KObj(secret))
		return nil, false, nil
	case secret.Type != v1.SecretType(bootstrapapi.SecretTypeBootstrapToken) || secret.Data == nil:
		log.Info("Bootstrap secret matching bearer token has an invalid type", "secret", klog.KObj(secret), "type", secret.Type)
		return nil, false, nil
	case subtle.ConstantTimeCompare([]byte(bootstrapsecretutil.GetData(secret, bootstrapapi.BootstrapTokenSecretKey)), []byte(tokenSecret)) != 1:
		log.Info("Bootstrap secret matching bearer token has an invalid token-secret", "secret", klog.KObj(secret))
		return nil, false, nil
	case bootstrapsecretutil.GetData(secret, bootstrapapi.BootstrapTokenIDKey) != tokenID:
		log.Info("Bootstrap secret matching bearer token has an invalid token-id", "secret", klog.KObj(secret))
		return nil, false, nil
	case bootstrapsecretutil.HasExpired(secret, b.now()):
		return nil, false, nil
	case bootstrapsecretutil.GetData(secret, bootstrapapi.BootstrapTokenUsageAuthentication) != "true":
		log.Info("Bootstrap secret matching bearer token is not marked for authentication", "secret", klog.KObj(secret))
		return nil, false, nil
	}
	groups, err := bootstrapsecretutil.GetGroups(secret)
	if err != nil {
		log.Info("Bootstrap secret matching bearer token has invalid extra groups", "secret", klog.KObj(secret), "err", err)
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name:   bootstrapapi.BootstrapUserPrefix + tokenID,
		Groups: groups,
	}}, true, nil
}
