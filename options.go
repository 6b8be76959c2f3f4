package kite

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/apiserver/authn"
	"github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/etcd/backend"
	"github.com/kite-project/kite/storage/watchcache"
)

// DefaultHTTP2MaxStreamsPerConnection is kube-apiserver's limit of
// concurrent HTTP/2 streams per client connection.
const DefaultHTTP2MaxStreamsPerConnection = 100

// DefaultSecurePort is kube-apiserver's port; the command uses it by
// default, embedders get a free port (SecurePort 0).
const DefaultSecurePort = 6443

// Options configure a control plane. The zero value works: a temporary
// data directory, embedded etcd, HTTPS on a free port of 127.0.0.1.
type Options struct {
	// DataDir holds etcd's data (when embedded), the CA, serving
	// certificate, admin token and ServiceAccount signing key
	// (DataDir/pki) and the admin kubeconfig.
	// Empty means a temporary directory that Close removes.
	DataDir string
	// BindAddress is the address the API listens on; "" means 127.0.0.1.
	BindAddress string
	// SecurePort is the HTTPS port; 0 picks a free one (kube-apiserver's
	// --secure-port; the command defaults it to 6443).
	SecurePort int
	// ExtraSANs are more host names or IPs for the serving certificate
	// (k3s's --tls-san), besides 127.0.0.1, ::1, localhost and a
	// BindAddress that is one address: the names other hosts reach the
	// API by. Changing them reissues the serving certificate from the
	// same CA on the next start.
	ExtraSANs []string
	// Backend, when set, is an etcd the caller opened (the kite command
	// opens it from its flags); Kite uses it and does not close it.
	// Otherwise Kite opens one from EtcdServers or embeds one.
	Backend *backend.Backend
	// Compactor, when set, is the caller's compactor of Backend; Kite
	// reads compaction revisions from it and does not run it. Otherwise
	// Kite runs its own every EtcdCompactionInterval.
	Compactor *etcd.Compactor
	// EtcdServers, when set, is an external etcd cluster to use instead
	// of the embedded one (--etcd-servers).
	EtcdServers []string
	// EtcdUnsafeNoFsync turns off fsync in the embedded etcd: for tests.
	EtcdUnsafeNoFsync bool
	// EtcdLogLevel is the embedded etcd's log level ("error" when empty).
	EtcdLogLevel string
	// EtcdCompactionInterval is how often etcd history is compacted
	// (--etcd-compaction-interval); 0 means 5 minutes, negative never.
	EtcdCompactionInterval time.Duration
	// KubeconfigPath is where the admin kubeconfig is written; "" means
	// DataDir/kubeconfig.
	KubeconfigPath string
	// Version is what /version reports; zero means DefaultVersion().
	Version version.Info
	// WatchCacheSizes are --watch-cache-sizes and --default-watch-cache-size:
	// per resource, 0 serves it from etcd alone and a positive size bounds
	// its event window. Nil caches every resource but events with the
	// default window.
	WatchCacheSizes *watchcache.Sizes
	// DisableWatchCache serves every read from etcd (kube-apiserver's
	// --watch-cache=false). By default each resource but events is read
	// through a watch cache, as upstream.
	DisableWatchCache bool
	// WrapStorage, if set, wraps each resource's etcd store instead of the
	// watch cache: it gets the resource and the store and returns what the
	// registry uses; stop is called on Close and may be nil.
	WrapStorage func(gr schema.GroupResource, store storage.Interface) (wrapped storage.Interface, stop func(), err error)
	// HTTP2MaxStreamsPerConnection limits the concurrent HTTP/2 streams of
	// one client connection (--http2-max-streams-per-connection); 0 means
	// DefaultHTTP2MaxStreamsPerConnection.
	HTTP2MaxStreamsPerConnection int
	// Profiling serves Go's profiles (net/http/pprof) at /debug/pprof/ to
	// authenticated clients, as kube-apiserver's --profiling does (on by
	// default in the kite command, off for embedders).
	Profiling bool
	// Controllers names the control loops to run beside the API (see
	// controllers.All). Nil means controllers.EmbeddedDefault(): the
	// namespace and serviceaccount controllers, as embedders have always
	// had, and the root CA publisher (every namespace's kube-root-ca.crt,
	// which pods' service account volumes mount) and the ClusterRole
	// aggregation controller (the rules of admin, edit and view); the scheduler, node lifecycle, taint eviction, pod GC, garbage
	// collector, ReplicaSet, Deployment, Job and CronJob controllers run
	// only when named, so that a test's objects are not placed, tainted,
	// collected or given pods behind its back (envtest's behaviour). An
	// empty, non-nil slice runs none. "kite server" runs
	// controllers.All().
	Controllers []string
	// NodeMonitorGracePeriod is how long a node may go silent before the
	// node lifecycle controller marks it Unknown
	// (--node-monitor-grace-period); 0 means 50 s.
	NodeMonitorGracePeriod time.Duration
	// TerminatedPodGCThreshold is how many terminated pods the pod GC
	// keeps (--terminated-pod-gc-threshold); 0 means 12500, negative all.
	TerminatedPodGCThreshold int
	// CRDs are CustomResourceDefinitions installed before Start returns:
	// each is Established and its resource served, and discovery on the
	// returned config lists them. On a data directory that has them they
	// are updated to these.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// CRDPaths are files and directories of CRD YAML (or JSON) installed
	// as CRDs are: a directory's *.yaml, *.yml and *.json files, several
	// documents each; documents of other kinds are skipped.
	CRDPaths []string
	// ServiceClusterIPRanges are --service-cluster-ip-range: the CIDR
	// Services take their cluster IPs from, or two of different IP
	// families for dual-stack (the first the primary). Nil means
	// 10.43.0.0/16 (k3s's). Its first address is the `kubernetes`
	// Service's.
	ServiceClusterIPRanges []string
	// ClusterCIDRs is --cluster-cidr, the pod range the node IPAM
	// controller (controllers.NodeIPAM, when run) cuts into each node's
	// podCIDR: one CIDR, or an IPv4 and an IPv6 one; nil means
	// 10.42.0.0/16 (k3s's). NodeCIDRMaskSize is --node-cidr-mask-size,
	// the size of an IPv4 node block; 0 means 24.
	ClusterCIDRs     []string
	NodeCIDRMaskSize int
	// ServiceNodePortRange is --service-node-port-range: where NodePort
	// and LoadBalancer Services take their node ports from; "" means
	// 30000-32767.
	ServiceNodePortRange string
	// EnableAdmissionPlugins and DisableAdmissionPlugins are
	// kube-apiserver's --enable-admission-plugins and
	// --disable-admission-plugins: upstream's plugin names, added to or
	// taken from its default set (docs/admission.md says which Kite runs).
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	// Webhooks are admission webhooks to install, pointing at a webhook
	// server of the embedding process (envtest's WebhookInstallOptions).
	Webhooks WebhookInstallOptions
	// ReadyTimeout bounds how long Start waits for the storage to be
	// ready (every watch cache filled); 0 means 60 s.
	ReadyTimeout time.Duration
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the
	// read-only and the mutating requests served at once
	// (--max-requests-inflight, --max-mutating-requests-inflight); past
	// them a request gets 429 with Retry-After. Watches and requests of
	// system:masters are not counted. 0 means 400 and 200, negative no
	// limit.
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	// DisablePriorityAndFairness is --enable-priority-and-fairness=false:
	// the two limits above apply as they are, instead of being the seats
	// API priority and fairness shares among priority levels
	// (docs/flowcontrol.md).
	DisablePriorityAndFairness bool
	// MetricResolution is how often the metrics API (metrics.k8s.io,
	// kubectl top) reads the agents (--metric-resolution); 0 means
	// metrics-server's 15 s.
	MetricResolution time.Duration
	// MinRequestTimeout is how long a watch without timeoutSeconds lasts
	// at least (--min-request-timeout; it lasts up to twice as long); 0
	// means 30 minutes.
	MinRequestTimeout time.Duration
	// ReadHeaderTimeout bounds the TLS handshake and the reading of a
	// request's headers; 0 means DefaultReadHeaderTimeout. A body is read
	// within its request's timeout.
	ReadHeaderTimeout time.Duration
	// AuthorizationMode is kube-apiserver's --authorization-mode: the
	// authorizers in order, comma-separated, of AlwaysAllow, AlwaysDeny,
	// Node and RBAC. "" means "Node,RBAC" (upstream's bootstrap policy is
	// reconciled at start; the admin is in system:masters, which every
	// mode allows); "AlwaysAllow" lets every authenticated request
	// through, as Kite did before it had RBAC.
	AuthorizationMode string
	// StaticTokens are bearer tokens accepted besides the admin's, each
	// with its user (kube-apiserver's --token-auth-file): for tests and
	// embedders that want users other than the admin.
	StaticTokens []authn.Token
	// WriteTimeout bounds each write to a client (a watch's, or the
	// HTTP/2 connection's) and how long a response may take beyond its
	// request timeout; a client that does not take its bytes in time
	// loses its stream (HTTP/2) or connection (HTTP/1.1). 0 means
	// apiserver.DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Authentication: the ServiceAccount token issuer and keys, anonymous
	// requests.
	Authentication AuthenticationOptions
	// ClusterDNS runs the cluster DNS server beside the controllers and
	// makes its kube-dns Service (clusterdns.go, docs/dns.md); zero runs none.
	ClusterDNS ClusterDNSOptions
}

// AuthenticationOptions say how requests are authenticated (see authn.go
// and docs/auth.md).
type AuthenticationOptions struct {
	// ServiceAccountIssuer is the iss of ServiceAccount tokens and the
	// only one accepted (--service-account-issuer); "" means
	// https://kubernetes.default.svc.cluster.local. It is also the API's
	// audience, a TokenRequest's default.
	ServiceAccountIssuer string
	// ServiceAccountSigningKeyFile signs ServiceAccount tokens
	// (--service-account-signing-key-file, a PEM RSA or ECDSA private
	// key); "" means DataDir/pki/sa.key, generated on first start and kept.
	ServiceAccountSigningKeyFile string
	// ServiceAccountKeyFiles are more keys that verify tokens
	// (--service-account-key-file: PEM public or private keys), e.g. the
	// previous signing key during a rotation.
	ServiceAccountKeyFiles []string
	// DisableAnonymousAuth is --anonymous-auth=false. Anonymous requests
	// reach all paths, for the authorizer to judge, only once an
	// authorizer is configured; until then they reach the health
	// endpoints and the issuer discovery only, whatever this says.
	DisableAnonymousAuth bool
	// KubeletCertificateAuthority (--kubelet-certificate-authority, a PEM
	// file) verifies every agent's serving certificate when the API server
	// dials it; "" verifies those the cluster CA issued and lets the others
	// (agents' self-signed ones) through, docs/auth.md says why.
	KubeletCertificateAuthority string
}

// DefaultReadHeaderTimeout is kube-apiserver's: just shy of its upper
// bound on request timeouts.
const DefaultReadHeaderTimeout = 32 * time.Second
