// Package approver approves the node client CertificateSigningRequests
// that their requestors may have approved, as kube-controller-manager's
// csrapproving controller (pkg/controller/certificates/approver): a
// kube-apiserver-client-kubelet request for a node's client certificate
// is approved when a SubjectAccessReview says its requestor may create
// certificatesigningrequests/selfnodeclient (a node renewing its own) or
// /nodeclient (a bootstrap token: kubeadm binds system:bootstrappers to
// system:certificates.k8s.io:certificatesigningrequests:nodeclient). Other
// requests are left to people (kubectl certificate approve).
package approver

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/certificates"
	"github.com/kite-project/kite/controllers/informer"
)

// Options configure a Controller.
type Options struct {
	// Client reads requests, asks SubjectAccessReviews and approves.
	// Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process.
	Informers *informer.Factory
}

// Controller approves node client requests. Run drives it.
type Controller struct {
	client kubernetes.Interface
	loop   *certificates.Loop
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("certificatesigningrequest-approving-controller: Client is required")
	}
	c := &Controller{client: opts.Client}
	var err error
	if c.loop, err = certificates.NewLoop("certificatesigningrequest-approving-controller", opts.Client, opts.Informers, c.sync); err != nil {
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
	candidates, err := Candidates(csr)
	if err != nil {
		return fmt.Errorf("unable to parse csr %q: %w", name, err)
	}
	for _, r := range candidates {
		sar, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, Review(csr, r), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("subject access review for csr %s: %w", name, err)
		}
		if !sar.Status.Allowed {
			continue
		}
		approved := csr.DeepCopy()
		approved.Status.Conditions = append(approved.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: r.Message,
		})
		_, err = c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, approved, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("error updating approval for csr %s: %w", name, err)
		}
		return nil
	}
	if len(candidates) > 0 {
		// Upstream's IgnorableError: logged, not retried; a later change
		// of the request brings it back.
		klog.FromContext(ctx).V(2).Info("Recognized csr but subject access review was not approved", "csr", name)
	}
	return nil
}
