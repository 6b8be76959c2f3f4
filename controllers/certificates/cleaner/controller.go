// Package cleaner deletes CertificateSigningRequests that have served
// their purpose, as kube-controller-manager's csrcleaner controller
// (pkg/controller/certificates/cleaner): Due says when, and rather than
// upstream's hourly pass over every request, each request is looked at
// when it changes and again when it falls due.
package cleaner

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/certificates"
	"github.com/kite-project/kite/controllers/informer"
)

// Options configure a Controller.
type Options struct {
	// Client reads and deletes requests. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process.
	Informers *informer.Factory
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller deletes old requests. Run drives it.
type Controller struct {
	client kubernetes.Interface
	now    func() time.Time
	loop   *certificates.Loop
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("certificatesigningrequest-cleaner-controller: Client is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: opts.Client, now: opts.Now}
	var err error
	if c.loop, err = certificates.NewLoop("certificatesigningrequest-cleaner-controller", opts.Client, opts.Informers, c.sync); err != nil {
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
	due := Due(csr)
	if due.IsZero() {
		return nil
	}
	if wait := due.Sub(c.now()); wait > 0 {
		c.loop.Queue.AddAfter(name, wait)
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Cleaning CSR", "csr", name)
	err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &csr.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("unable to delete CSR %q: %w", name, err)
	}
	return nil
}
