package bootstrap

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// Options configure either controller.
type Options struct {
	// Client reads the tokens and writes cluster-info (the signer) or
	// deletes tokens (the cleaner). Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// tokens is the informer of bootstrap token Secrets: kube-system's
// Secrets of their type, as upstream filters its shared informer.
func tokens(opts Options, name string, h informer.Handlers[*corev1.Secret]) (*informer.Informer[*corev1.Secret], error) {
	return informer.For(opts.Informers, informer.Options[*corev1.Secret]{
		Name: name,
		Shape: informer.Shape{Resource: "secrets", Namespace: metav1.NamespaceSystem,
			FieldSelector: fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String()},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Secrets(metav1.NamespaceSystem), nil),
		Handlers:      h,
	})
}

// Signer keeps kube-public/cluster-info signed by the bootstrap tokens.
type Signer struct {
	client     kubernetes.Interface
	now        func() time.Time
	loop       *controller.Loop[string]
	queue      *workqueue.Queue[string]
	configMaps *informer.Informer[*corev1.ConfigMap]
	secrets    *informer.Informer[*corev1.Secret]
}

// NewSigner builds the bootstrap signer (bootstrap-signer-controller).
func NewSigner(opts Options) (*Signer, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("bootstrap signer: Client is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Signer{client: opts.Client, now: opts.Now, queue: workqueue.New[string](workqueue.Options{})}
	// One key: every change of a token or of cluster-info re-signs it.
	queue := func() { c.queue.Add(bootstrapapi.ConfigMapClusterInfo) }
	var err error
	c.configMaps, err = informer.For(opts.Informers, informer.Options[*corev1.ConfigMap]{
		Name: "cluster-info",
		Shape: informer.Shape{Resource: "configmaps", Namespace: metav1.NamespacePublic,
			FieldSelector: fields.OneTermEqualSelector("metadata.name", bootstrapapi.ConfigMapClusterInfo).String()},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().ConfigMaps(metav1.NamespacePublic), nil),
		Handlers: informer.Handlers[*corev1.ConfigMap]{
			OnAdd:    func(*corev1.ConfigMap) { queue() },
			OnUpdate: func(_, _ *corev1.ConfigMap) { queue() },
		},
	})
	if err != nil {
		return nil, err
	}
	c.secrets, err = tokens(opts, "bootstrap tokens", informer.Handlers[*corev1.Secret]{
		OnAdd:    func(*corev1.Secret) { queue() },
		OnUpdate: func(_, _ *corev1.Secret) { queue() },
		OnDelete: func(*corev1.Secret) { queue() },
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "bootstrap-signer", Queue: c.queue, Informers: []controller.Informer{c.configMaps, c.secrets}, Sync: c.sync}
	return c, nil
}

// Run signs until ctx ends.
func (c *Signer) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Signer) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Signer) sync(ctx context.Context, key string) error {
	cm, ok := c.configMaps.Store().Get(metav1.NamespacePublic + "/" + bootstrapapi.ConfigMapClusterInfo)
	if !ok {
		return nil
	}
	now := c.now()
	want, changed, next, err := Sign(cm, c.secrets.Store().List(), now)
	if err != nil {
		return err
	}
	if !next.IsZero() {
		// A token stops signing when it expires, whether or not the
		// cleaner has deleted it yet.
		c.queue.AddAfter(key, next.Sub(now))
	}
	if !changed {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Signing cluster-info", "configMap", klog.KObj(cm))
	_, err = c.client.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(ctx, want, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // its change brings it back
	}
	if err != nil {
		return fmt.Errorf("update configmap %s/%s: %w", metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, err)
	}
	return nil
}

// Cleaner deletes bootstrap tokens once they expire.
type Cleaner struct {
	client  kubernetes.Interface
	now     func() time.Time
	loop    *controller.Loop[string]
	queue   *workqueue.Queue[string]
	secrets *informer.Informer[*corev1.Secret]
}

// NewCleaner builds the token cleaner (token-cleaner-controller).
func NewCleaner(opts Options) (*Cleaner, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("token cleaner: Client is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Cleaner{client: opts.Client, now: opts.Now, queue: workqueue.New[string](workqueue.Options{})}
	queue := func(s *corev1.Secret) { c.queue.Add(s.Name) }
	var err error
	c.secrets, err = tokens(opts, "bootstrap tokens", informer.Handlers[*corev1.Secret]{
		OnAdd:    queue,
		OnUpdate: func(_, s *corev1.Secret) { queue(s) },
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "token-cleaner", Queue: c.queue, Informers: []controller.Informer{c.secrets}, Sync: c.sync}
	return c, nil
}

// Run cleans until ctx ends.
func (c *Cleaner) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the cache is listed and nothing is queued.
func (c *Cleaner) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Cleaner) sync(ctx context.Context, name string) error {
	s, ok := c.secrets.Store().Get(metav1.NamespaceSystem + "/" + name)
	if !ok {
		return nil
	}
	expired, wait := Expiry(s, c.now())
	if !expired {
		if wait > 0 {
			c.queue.AddAfter(name, wait)
		}
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Deleting expired bootstrap token", "secret", klog.KObj(s))
	err := c.client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete expired bootstrap token %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	return nil
}
