package approver

import (
	"crypto/x509"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/kite-project/kite/apis/certificates/validation"
)

// Recognizer is one kind of request the approver approves, upstream's
// csrRecognizer: the permission the requestor needs (asked with a
// SubjectAccessReview) and the message of the Approved condition.
type Recognizer struct {
	Permission authorizationv1.ResourceAttributes
	Message    string
	recognize  func(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool
}

func nodeClientPermission(subresource string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Verb: "create", Subresource: subresource, Version: "*"}
}

// recognizers are upstream's, in its order: a node renewing its own
// client certificate (selfnodeclient), then any node client certificate
// (nodeclient: what a bootstrap token may ask for).
var recognizers = []Recognizer{
	{Permission: nodeClientPermission("selfnodeclient"), Message: "Auto approving self kubelet client certificate after SubjectAccessReview.",
		recognize: func(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
			return csr.Spec.Username == req.Subject.CommonName && isNodeClient(csr, req)
		}},
	{Permission: nodeClientPermission("nodeclient"), Message: "Auto approving kubelet client certificate after SubjectAccessReview.",
		recognize: isNodeClient},
}

func isNodeClient(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName &&
		validation.ValidateKubeletClientCSR(req, csr.Spec.Usages) == nil
}

// Candidates is upstream's sarApprover.handle up to the reviews: for a
// request nobody has approved, denied or signed, the recognizers it
// matches, in order; the first whose review allows approves it. An error
// is a request that cannot be read.
func Candidates(csr *certificatesv1.CertificateSigningRequest) ([]Recognizer, error) {
	if len(csr.Status.Certificate) > 0 {
		return nil, nil
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return nil, nil
		}
	}
	req, err := validation.ParseCSR(csr.Spec.Request)
	if err != nil {
		return nil, err
	}
	var out []Recognizer
	for _, r := range recognizers {
		if r.recognize(csr, req) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Review is the SubjectAccessReview that asks whether the requestor of
// csr has r's permission.
func Review(csr *certificatesv1.CertificateSigningRequest, r Recognizer) *authorizationv1.SubjectAccessReview {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	attrs := r.Permission
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra, ResourceAttributes: &attrs,
	}}
}
