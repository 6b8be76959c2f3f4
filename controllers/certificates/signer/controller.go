// Package signer signs approved CertificateSigningRequests of the
// kubernetes.io/kube-apiserver-client, kube-apiserver-client-kubelet and
// kubelet-serving signers with the cluster CA, as kube-controller-manager's
// csrsigning controllers (pkg/controller/certificates/signer) do with
// --cluster-signing-cert-file and --cluster-signing-key-file: Decide says
// what, the runner writes the certificate or the Failed condition through
// certificatesigningrequests/status.
package signer

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/certificates"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/pki"
)

// Options configure a Controller.
type Options struct {
	// Client reads requests and writes their status. Required.
	Client kubernetes.Interface
	// CA signs. Required.
	CA *pki.Bundle
	// MaxDuration is the longest certificate issued
	// (--cluster-signing-duration); 0 means a year.
	MaxDuration time.Duration
	// Informers shares caches with the other controllers of the process.
	Informers *informer.Factory
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller signs requests. Run drives it.
type Controller struct {
	opts Options
	loop *certificates.Loop
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil || opts.CA == nil {
		return nil, fmt.Errorf("certificatesigningrequest-signing-controller: Client and CA are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{opts: opts}
	var err error
	if c.loop, err = certificates.NewLoop("certificatesigningrequest-signing-controller", opts.Client, opts.Informers, c.sync); err != nil {
		return nil, err
	}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the cache is listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Controller) sync(ctx context.Context, name string) error {
	csr := c.loop.Get(name)
	if csr == nil {
		return nil
	}
	d, err := Decide(csr, c.opts.MaxDuration, c.opts.Now())
	if err != nil {
		return err
	}
	csr = csr.DeepCopy()
	switch d.Action {
	case Nothing:
		return nil
	case Fail:
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue,
			Reason: failedReason, Message: d.Message, LastUpdateTime: metav1.NewTime(c.opts.Now()),
		})
	case Sign:
		cert, err := c.opts.CA.SignRequest(d.Request, d.KeyUsage, d.ExtKeyUsage, d.NotBefore, d.NotAfter)
		if err != nil {
			return fmt.Errorf("error auto signing csr %s: %w", name, err)
		}
		csr.Status.Certificate = cert
	}
	// A conflict or a request gone meanwhile: the cache's next copy
	// brings it back if there is still work.
	_, err = c.opts.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("update status of csr %s: %w", name, err)
	}
	return nil
}
