// Package certificates holds what the controllers of
// CertificateSigningRequests (signer, approver, cleaner: upstream's
// pkg/controller/certificates) share: a Loop over the cache of every
// request, keyed by name.
package certificates

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// Loop is one CSR controller's scaffold: the requests' cache (shared
// through the Factory), a queue of their names that every change feeds,
// and the controller.Loop that runs sync on them.
type Loop struct {
	Queue *workqueue.Queue[string]
	CSRs  *informer.Informer[*certificatesv1.CertificateSigningRequest]
	loop  *controller.Loop[string]
}

// NewLoop returns the Loop of the controller name; sync gets the name of
// a request that changed (or that the controller queued again).
func NewLoop(name string, client kubernetes.Interface, f *informer.Factory, sync func(ctx context.Context, csr string) error) (*Loop, error) {
	l := &Loop{Queue: workqueue.New[string](workqueue.Options{})}
	key := func(c *certificatesv1.CertificateSigningRequest) { l.Queue.Add(c.Name) }
	var err error
	l.CSRs, err = informer.For(f, informer.Options[*certificatesv1.CertificateSigningRequest]{
		Name: "certificatesigningrequests", Shape: informer.Shape{Resource: "certificatesigningrequests.certificates.k8s.io"},
		ListerWatcher: listwatch.FromTypedClient(client.CertificatesV1().CertificateSigningRequests(), nil),
		Handlers: informer.Handlers[*certificatesv1.CertificateSigningRequest]{
			OnAdd:    key,
			OnUpdate: func(_, c *certificatesv1.CertificateSigningRequest) { key(c) },
		},
	})
	if err != nil {
		return nil, err
	}
	l.loop = &controller.Loop[string]{Name: name, Queue: l.Queue, Informers: []controller.Informer{l.CSRs}, Sync: sync}
	return l, nil
}

// Get returns the cached request, nil if there is none.
func (l *Loop) Get(name string) *certificatesv1.CertificateSigningRequest {
	c, _ := l.CSRs.Store().Get(name)
	return c
}

// Run works until ctx ends.
func (l *Loop) Run(ctx context.Context) { l.loop.Run(ctx) }

// WaitIdle returns once the cache is listed and nothing is queued.
func (l *Loop) WaitIdle(ctx context.Context) error { return l.loop.WaitIdle(ctx) }
