package controllers

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/controllers/informer"
)

// serviceAccountOf is the ServiceAccount in kube-system a controller
// writes as with service-account credentials: the name
// kube-controller-manager 1.37 gives its client (ControllerContext's
// NewClient), which the bootstrap policy's system:controller:<name>
// binding names. "" is the Manager's own identity (Config's), as
// upstream's tokens controller uses kube-controller-manager's. ok is
// false for a controller nobody named: a new controller must choose.
func serviceAccountOf(controller string) (sa string, ok bool) {
	switch controller {
	case Namespace:
		return "namespace-controller", true
	case ServiceAccount:
		return "service-account-controller", true
	case RootCACertPublisher:
		return "root-ca-cert-publisher", true
	case NodeLifecycle, TaintEviction, NodeIPAM:
		return "node-controller", true
	case PodGC:
		return "pod-garbage-collector", true
	case GarbageCollector:
		return "generic-garbage-collector", true
	case ReplicaSet:
		return "replicaset-controller", true
	case Deployment:
		return "deployment-controller", true
	case Job:
		return "job-controller", true
	case CronJob:
		return "cronjob-controller", true
	case Disruption:
		return "disruption-controller", true
	case ReplicationController:
		return "replication-controller", true
	case StatefulSet:
		return "statefulset-controller", true
	case DaemonSet:
		return "daemon-set-controller", true
	case ClusterRoleAggregation:
		return "clusterrole-aggregation-controller", true
	case ServiceAccountToken:
		return "", true
	case HorizontalPodAutoscaler:
		return "horizontal-pod-autoscaler", true
	case EndpointSlice:
		return "endpointslice-controller", true
	case Endpoint:
		return "endpoint-controller", true
	case EndpointSliceMirroring:
		return "endpointslicemirroring-controller", true
	case ResourceQuota:
		return "resourcequota-controller", true
	case CSRSigning, CSRApproving, CSRCleaner:
		return "certificate-controller", true
	case BootstrapSigner:
		return "bootstrap-signer", true
	case TokenCleaner:
		return "token-cleaner", true
	// Upstream's in-tree provisioners run inside the PV binder, with
	// its ServiceAccount: Kite's local path provisioner does the same.
	case PersistentVolumeBinder, LocalPathProvisioner:
		return "persistent-volume-binder", true
	case PVCProtection:
		return "pvc-protection-controller", true
	case PVProtection:
		return "pv-protection-controller", true
	case ValidatingAdmissionPolicyStatus:
		return "validatingadmissionpolicy-status-controller", true
	}
	return "", false
}

// ttlAfterFinished is the ServiceAccount of upstream's
// ttl-after-finished controller, whose work Kite's Job controller does.
const ttlAfterFinished = "ttl-after-finished-controller"

// tokenExpiration and tokenLeeway are kube-controller-manager's
// DynamicControllerClientBuilder's: an hour's token, asked for again
// when 20 % of its life is left.
const (
	tokenExpiration = int64(3600)
	tokenLeewayPct  = 20
)

// credentials hands each controller a configuration of its own
// ServiceAccount, as kube-controller-manager's
// --use-service-account-credentials: requests carry a bound-to-nothing
// token of the ServiceAccount (asked for through TokenRequest once an
// hour, not per request), the lists and watches of the shared caches
// carry the Manager's own identity (informer.IsSharedCache).
type credentials struct {
	root   *rest.Config
	rootRT http.RoundTripper
	// saRT is root's TLS without its client certificate: a certificate
	// would authenticate before the bearer token does.
	saRT http.RoundTripper
	core kubernetes.Interface
	now  func() time.Time

	mu     sync.Mutex
	tokens map[string]*saToken
}

func newCredentials(root *rest.Config) (*credentials, error) {
	rootRT, err := rest.TransportFor(root)
	if err != nil {
		return nil, fmt.Errorf("controllers: transport of %s: %w", root.Host, err)
	}
	anon := rest.AnonymousClientConfig(root)
	saRT, err := rest.TransportFor(anon)
	if err != nil {
		return nil, fmt.Errorf("controllers: transport of %s: %w", root.Host, err)
	}
	core, err := kubernetes.NewForConfig(root)
	if err != nil {
		return nil, fmt.Errorf("controllers: client: %w", err)
	}
	return &credentials{root: root, rootRT: rootRT, saRT: saRT, core: core, now: time.Now, tokens: map[string]*saToken{}}, nil
}

// configFor is the configuration of a controller writing as the
// ServiceAccount sa in kube-system.
func (c *credentials) configFor(sa string) *rest.Config {
	c.mu.Lock()
	tok := c.tokens[sa]
	if tok == nil {
		tok = &saToken{creds: c, name: sa}
		c.tokens[sa] = tok
	}
	c.mu.Unlock()
	return &rest.Config{
		Host:      c.root.Host,
		APIPath:   c.root.APIPath,
		Transport: &asServiceAccount{root: c.rootRT, sa: c.saRT, token: tok},
		QPS:       c.root.QPS,
		Burst:     c.root.Burst,
		Timeout:   c.root.Timeout,
		// As upstream's constructClient: the user agent names the
		// ServiceAccount.
		UserAgent: c.root.UserAgent + "/" + serviceaccount.MakeUsername(metav1.NamespaceSystem, sa),
	}
}

// asServiceAccount sends a request with the ServiceAccount's token,
// a shared cache's with the root identity.
type asServiceAccount struct {
	root, sa http.RoundTripper
	token    *saToken
}

func (a *asServiceAccount) RoundTrip(r *http.Request) (*http.Response, error) {
	if informer.IsSharedCache(r.Context()) {
		return a.root.RoundTrip(r)
	}
	tok, err := a.token.get(r.Context())
	if err != nil {
		return nil, err
	}
	r = utilnet.CloneRequest(r)
	r.Header.Set("Authorization", "Bearer "+tok)
	return a.sa.RoundTrip(r)
}

// saToken is one ServiceAccount's token, asked for again at 80 % of its
// life.
type saToken struct {
	creds *credentials
	name  string

	mu        sync.Mutex
	value     string
	refreshAt time.Time
	expires   time.Time
}

// get returns a token, asking for one when there is none or it is due;
// a token still valid is kept when asking fails.
func (t *saToken) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.creds.now()
	if t.value != "" && now.Before(t.refreshAt) {
		return t.value, nil
	}
	value, expires, err := t.creds.request(ctx, t.name)
	if err != nil {
		if t.value != "" && now.Before(t.expires) {
			return t.value, nil
		}
		return "", err
	}
	life := expires.Sub(now)
	t.value, t.expires = value, expires
	t.refreshAt = now.Add(life - life*tokenLeewayPct/100)
	return t.value, nil
}

// request makes sure the ServiceAccount exists (as upstream's
// getOrCreateServiceAccount) and asks for a token of it.
func (c *credentials) request(ctx context.Context, name string) (string, time.Time, error) {
	sas := c.core.CoreV1().ServiceAccounts(metav1.NamespaceSystem)
	created := false
	if _, err := sas.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem}}
		if _, err := sas.Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", time.Time{}, fmt.Errorf("controllers: serviceaccount %s/%s: %w", metav1.NamespaceSystem, name, err)
		}
		created = true
	} else if err != nil {
		return "", time.Time{}, fmt.Errorf("controllers: serviceaccount %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	tr, err := sas.CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(tokenExpiration)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("controllers: token of serviceaccount %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	if created {
		// The authenticator reads ServiceAccounts from its cache: a
		// token of one just made is good once the cache has it.
		if err := c.awaitAuthenticates(ctx, tr.Status.Token); err != nil {
			return "", time.Time{}, fmt.Errorf("controllers: token of serviceaccount %s/%s: %w", metav1.NamespaceSystem, name, err)
		}
	}
	return tr.Status.Token, tr.Status.ExpirationTimestamp.Time, nil
}

// awaitAuthenticates waits until a TokenReview accepts token.
func (c *credentials) awaitAuthenticates(ctx context.Context, token string) error {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := c.core.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return r.Status.Authenticated, nil
	})
}
