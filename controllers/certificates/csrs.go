// Package certificates holds what the controllers of
// CertificateSigningRequests (signer, approver, cleaner: upstream's
// pkg/controller/certificates) share.
package certificates

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// CSRInformer is the cache of every CertificateSigningRequest, each
// change queueing the request's name: what the three CSR controllers
// share.
func CSRInformer(client kubernetes.Interface, f *informer.Factory, q *workqueue.Queue[string]) (*informer.Informer[*certificatesv1.CertificateSigningRequest], error) {
	key := func(c *certificatesv1.CertificateSigningRequest) { q.Add(c.Name) }
	return informer.For(f, informer.Options[*certificatesv1.CertificateSigningRequest]{
		Name: "certificatesigningrequests", Shape: informer.Shape{Resource: "certificatesigningrequests.certificates.k8s.io"},
		ListerWatcher: listwatch.FromTypedClient(client.CertificatesV1().CertificateSigningRequests(), nil),
		Handlers: informer.Handlers[*certificatesv1.CertificateSigningRequest]{
			OnAdd:    key,
			OnUpdate: func(_, c *certificatesv1.CertificateSigningRequest) { key(c) },
		},
	})
}
