// Package serviceaccounttoken fills the Secrets of type
// kubernetes.io/service-account-token that users create (the legacy,
// long-lived ServiceAccount tokens), as kube-controller-manager's tokens
// controller does: token, ca.crt and namespace in the data, the
// ServiceAccount's UID in the kubernetes.io/service-account.uid
// annotation; such a Secret whose ServiceAccount is gone (or is another
// one by now) is deleted.
//
// Unlike upstream, which signs a legacy JWT with its own copy of the
// private key, the controller is a client of the API like every other and
// holds no key: the token is a TokenRequest token bound to the Secret
// (serviceaccounts/token, boundObjectRef Secret, the longest lifetime
// allowed: 2^32 s), so it dies with the Secret, as a legacy token does,
// and authenticates as the ServiceAccount.
package serviceaccounttoken

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// tokenLifetime is the longest a TokenRequest may ask (upstream's
// validation allows up to 2^32 seconds): a legacy token does not expire.
const tokenLifetime = int64(1) << 32

// Options configure a Controller.
type Options struct {
	// Client reads ServiceAccounts, requests tokens and writes Secrets.
	// Required.
	Client kubernetes.Interface
	// RootCA is the ca.crt put in each Secret. Required.
	RootCA []byte
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
}

// Controller fills token Secrets. Run drives it.
type Controller struct {
	client  kubernetes.Interface
	rootCA  []byte
	loop    *controller.Loop[string]
	queue   *workqueue.Queue[string]
	secrets *informer.Informer[*v1.Secret]
	sas     *informer.Informer[*v1.ServiceAccount]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("serviceaccount-token-controller: Client is required")
	}
	if len(opts.RootCA) == 0 {
		return nil, fmt.Errorf("serviceaccount-token-controller: RootCA is required")
	}
	c := &Controller{client: opts.Client, rootCA: opts.RootCA, queue: workqueue.New[string](workqueue.Options{})}
	key := func(s *v1.Secret) { c.queue.Add(s.Namespace + "/" + s.Name) }
	var err error
	// Only the token Secrets are cached, as upstream's controller filters
	// its secret informer by type.
	c.secrets, err = informer.For(opts.Informers, informer.Options[*v1.Secret]{
		Name: "service account token secrets", Shape: informer.Shape{Resource: "secrets", FieldSelector: fields.OneTermEqualSelector("type", string(v1.SecretTypeServiceAccountToken)).String()},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Secrets(""), nil),
		Handlers: informer.Handlers[*v1.Secret]{
			OnAdd:    key,
			OnUpdate: func(_, s *v1.Secret) { key(s) },
		},
	})
	if err != nil {
		return nil, err
	}
	// A ServiceAccount that goes (or comes back as another) takes its
	// token Secrets with it.
	requeueTokens := func(sa *v1.ServiceAccount) {
		for _, s := range c.secrets.Store().List() {
			if s.Namespace == sa.Namespace && s.Annotations[v1.ServiceAccountNameKey] == sa.Name {
				key(s)
			}
		}
	}
	c.sas, err = informer.For(opts.Informers, informer.Options[*v1.ServiceAccount]{
		Name: "serviceaccounts", Shape: informer.Shape{Resource: "serviceaccounts"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().ServiceAccounts(""), nil),
		Handlers: informer.Handlers[*v1.ServiceAccount]{
			OnAdd:    requeueTokens,
			OnUpdate: func(_, sa *v1.ServiceAccount) { requeueTokens(sa) },
			OnDelete: requeueTokens,
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "serviceaccount-token-controller", Queue: c.queue, Informers: []controller.Informer{c.secrets, c.sas}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once both caches are listed and no Secret is queued or
// being worked on.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// sync brings one Secret to what Decide says.
func (c *Controller) sync(ctx context.Context, key string) error {
	secret, _ := c.secrets.Store().Get(key)
	if secret == nil {
		return nil
	}
	saName := secret.Annotations[v1.ServiceAccountNameKey]
	sa, _ := c.sas.Store().Get(secret.Namespace + "/" + saName)
	if sa == nil && saName != "" {
		// As upstream: a cache miss is read live before a delete, so a
		// ServiceAccount created a moment ago does not lose its token.
		live, err := c.client.CoreV1().ServiceAccounts(secret.Namespace).Get(ctx, saName, metav1.GetOptions{})
		switch {
		case err == nil:
			sa = live
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("serviceaccount %s/%s: %w", secret.Namespace, saName, err)
		}
	}
	action, needToken := Decide(secret, sa, c.rootCA)
	switch action {
	case Nothing:
		return nil
	case Delete:
		err := c.client.CoreV1().Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete token secret %s: %w", key, err)
		}
		return nil
	}
	var token string
	if needToken {
		tr, err := c.client.CoreV1().ServiceAccounts(secret.Namespace).CreateToken(ctx, saName, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(tokenLifetime),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
		}}, metav1.CreateOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil // the Secret or its account went meanwhile: their events bring it back
			}
			return fmt.Errorf("token for secret %s: %w", key, err)
		}
		token = tr.Status.Token
	}
	// A conflict (written meanwhile) retries with the newer copy the
	// cache will hold.
	_, err := c.client.CoreV1().Secrets(secret.Namespace).Update(ctx, Filled(secret, sa, c.rootCA, token), metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("fill token secret %s: %w", key, err)
	}
	return nil
}
