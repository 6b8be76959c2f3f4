package controllers

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/certificates/signer"
	"github.com/kite-project/kite/pki"
)

// buildCSRSigning builds the CSR signer on the CA Options name. Without
// one it is idle, as kube-controller-manager's csrsigning controller is
// without signing files: requests stay approved and unsigned.
func buildCSRSigning(b builder) (Controller, error) {
	if b.opts.ClusterSigningCertFile == "" {
		return idle{reason: "no --cluster-signing-cert-file: CertificateSigningRequests are not signed"}, nil
	}
	ca, err := pki.LoadCAFiles(b.opts.ClusterSigningCertFile, b.opts.ClusterSigningKeyFile)
	if err != nil {
		return nil, err
	}
	return built(signer.New(signer.Options{Client: b.client, CA: ca, MaxDuration: b.opts.ClusterSigningDuration, Informers: b.informers}))
}

// idle is a controller that has nothing to do.
type idle struct{ reason string }

func (i idle) Run(ctx context.Context) {
	klog.FromContext(ctx).Info("Controller idle", "reason", i.reason)
	<-ctx.Done()
}

func (idle) WaitIdle(context.Context) error { return nil }
