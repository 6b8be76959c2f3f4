package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	certutil "k8s.io/client-go/util/cert"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/server"
	"github.com/kite-project/kite/agent/stats"
)

// newServer builds the agent's HTTPS server and binds its port, so that a
// port in use fails New rather than Run. It lets in the API server's
// client certificate (a certificate of the CA the agent trusts the API
// server with) and the agent's own bearer token (the admin credential it
// was given).
func (a *Agent) newServer(opts *Options) error {
	so := server.Options{Runtime: a.rt, Pods: a.served.pods}
	if st, ok := a.rt.(runtime.Stats); ok {
		nodeName := opts.NodeName
		so.Summary = func(ctx context.Context) (*statsapi.Summary, error) {
			node, err := stats.Node("/proc", time.Now())
			if err != nil {
				return nil, err
			}
			cs, err := st.ListContainerStats(ctx, nil)
			if err != nil {
				return nil, err
			}
			return stats.Build(nodeName, node, cs), nil
		}
	}
	if c := opts.RESTConfig; c != nil {
		so.AdminToken = c.BearerToken
		caPEM := c.CAData
		if len(opts.ServerClientCA) > 0 {
			caPEM = opts.ServerClientCA
		}
		if len(caPEM) == 0 && c.CAFile != "" {
			b, err := os.ReadFile(c.CAFile)
			if err != nil {
				return fmt.Errorf("agent: server client CA %s: %w", c.CAFile, err)
			}
			caPEM = b
		}
		if len(caPEM) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caPEM) {
				return fmt.Errorf("agent: server client CA: no certificate in the REST config's CA data")
			}
			so.ClientCAs = pool
		}
	}
	if opts.ServerCertificate != nil {
		so.Certificate = *opts.ServerCertificate
	} else {
		cert, err := selfSigned(*opts)
		if err != nil {
			return err
		}
		so.Certificate = cert
	}
	so.GetCertificate = opts.GetServerCertificate
	s, err := server.New(so)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(opts.ServerAddress, strconv.Itoa(int(opts.Node.Port))))
	if err != nil {
		return fmt.Errorf("agent: HTTPS server: %w", err)
	}
	// Port 0 took a free port: the Node reports the one it got.
	opts.Node.Port = int32(ln.Addr().(*net.TCPAddr).Port)
	a.server, a.serverLn = s, ln
	return nil
}

func selfSigned(opts Options) (tls.Certificate, error) {
	var ips []net.IP
	if ip := opts.Node.NodeIP; ip != nil {
		ips = append(ips, ip)
	}
	ips = append(ips, net.ParseIP("127.0.0.1"))
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(opts.NodeName, ips, []string{"localhost"})
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("agent: self-signed serving certificate: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// podSet follows the operations the sync loop is given: the pods the agent
// runs, for /pods.
type podSet struct {
	mu    sync.Mutex
	byUID map[types.UID]*v1.Pod
}

func (s *podSet) apply(u kubetypes.PodUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byUID == nil {
		s.byUID = map[types.UID]*v1.Pod{}
	}
	for _, p := range u.Pods {
		if u.Op == kubetypes.REMOVE {
			delete(s.byUID, p.UID)
		} else {
			s.byUID[p.UID] = p
		}
	}
}

func (s *podSet) pods() []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*v1.Pod, 0, len(s.byUID))
	for _, p := range s.byUID {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
