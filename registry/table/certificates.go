package table

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

var csrSpecDoc = certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()

// registerCertificates adds upstream's printer of CertificateSigningRequests
// (printCertificateSigningRequest): Name, Age, SignerName, Requestor,
// RequestedDuration, Condition.
func registerCertificates(c *Convertor) {
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Age", Type: "string", Description: objectMetaDoc["creationTimestamp"]},
		{Name: "SignerName", Type: "string", Description: csrSpecDoc["signerName"]},
		{Name: "Requestor", Type: "string", Description: csrSpecDoc["request"]},
		{Name: "RequestedDuration", Type: "string", Description: csrSpecDoc["expirationSeconds"]},
		{Name: "Condition", Type: "string", Description: certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]},
	}, func(csr *certificatesv1.CertificateSigningRequest, now time.Time) []any {
		signer := "<none>"
		if csr.Spec.SignerName != "" {
			signer = csr.Spec.SignerName
		}
		requested := "<none>"
		if csr.Spec.ExpirationSeconds != nil {
			requested = duration.HumanDuration(time.Duration(*csr.Spec.ExpirationSeconds) * time.Second)
		}
		return []any{csr.Name, age(csr.CreationTimestamp, now), signer, csr.Spec.Username, requested, csrCondition(csr)}
	}), &certificatesv1.CertificateSigningRequest{}, &certificatesv1.CertificateSigningRequestList{})
}

// csrCondition is upstream's extractCSRStatus: Denied before Approved
// before Pending, then ",Failed" and ",Issued".
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	status := "Pending"
	switch {
	case denied:
		status = "Denied"
	case approved:
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}
