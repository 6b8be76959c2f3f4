package builtin

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kite-project/kite/apis/certificates/validation"
	"github.com/kite-project/kite/registry"
)

// The admission plugins of CertificateSigningRequests, as kube-apiserver
// names them; all three are on by default, as upstream.
const (
	PluginCertificateApproval           = "CertificateApproval"
	PluginCertificateSigning            = "CertificateSigning"
	PluginCertificateSubjectRestriction = "CertificateSubjectRestriction"
)

type csr = certificatesv1.CertificateSigningRequest

// CertificateSigningRequests returns the strategy of certificates.k8s.io/v1
// certificatesigningrequests, upstream's (pkg/registry/certificates): the
// requestor (spec.username, uid, groups, extra) is the request's user,
// whatever the client sent; a request is immutable but through /status
// (the certificate, conditions other than Approved and Denied: the
// signers') and /approval (Approved and Denied: the approvers'), whose
// permissions the CertificateSigning and CertificateApproval admission
// plugins check.
func CertificateSigningRequests() *registry.Strategy {
	keepSpec := func(obj, old runtime.Object) { obj.(*csr).Spec = old.(*csr).Spec }
	return &registry.Strategy{
		Kind:         certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"),
		Resource:     "certificatesigningrequests",
		SingularName: "certificatesigningrequest",
		ShortNames:   []string{"csr"},
		New:          func() runtime.Object { return &csr{} },
		NewList:      func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		ValidateName: validation.AnyCertificateRequestName,
		// Nobody creates a request that is already approved or signed.
		PrepareForCreate:            func(obj runtime.Object) { obj.(*csr).Status = certificatesv1.CertificateSigningRequestStatus{} },
		PrepareForCreateFromRequest: setRequestor,
		PrepareForUpdate: func(obj, old runtime.Object) {
			keepSpec(obj, old)
			obj.(*csr).Status = old.(*csr).Status
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateCertificateSigningRequestCreate(obj.(*csr))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateCertificateSigningRequestUpdate(obj.(*csr), old.(*csr))
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": obj.(*csr).Spec.SignerName}
		},
		FieldLabels:              []string{"spec.signerName"},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					keepSpec(obj, old)
					n, o := obj.(*csr), old.(*csr)
					// Approved and Denied stay as they are when as many
					// are sent (adding or removing them is refused by
					// validation): they are the approvers'.
					preserveConditions(n, o, certificatesv1.CertificateApproved)
					preserveConditions(n, o, certificatesv1.CertificateDenied)
					conditionTimestamps(n, o, metav1.Now())
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return validation.ValidateCertificateSigningRequestStatusUpdate(obj.(*csr), old.(*csr))
				},
			},
			"approval": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					n, o := obj.(*csr), old.(*csr)
					conditionTimestamps(n, o, metav1.Now())
					conditions := n.Status.Conditions
					n.Spec, n.Status = o.Spec, o.Status
					n.Status.Conditions = conditions
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return validation.ValidateCertificateSigningRequestApprovalUpdate(obj.(*csr), old.(*csr))
				},
			},
		},
	}
}

// setRequestor is upstream's PrepareForCreate: the request's user, never
// the client's say, is who asks for the certificate.
func setRequestor(ctx context.Context, obj runtime.Object) {
	spec := &obj.(*csr).Spec
	spec.Username, spec.UID, spec.Groups, spec.Extra = "", "", nil, nil
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return
	}
	spec.Username, spec.UID, spec.Groups = u.GetName(), u.GetUID(), slices.Clone(u.GetGroups())
	if extra := u.GetExtra(); len(extra) > 0 {
		spec.Extra = map[string]certificatesv1.ExtraValue{}
		for k, v := range extra {
			spec.Extra[k] = slices.Clone(v)
		}
	}
}

// preserveConditions is upstream's preserveConditionInstances: n keeps
// o's conditions of type t when it has as many of them.
func preserveConditions(n, o *csr, t certificatesv1.RequestConditionType) {
	var oi, ni []int
	for i, c := range o.Status.Conditions {
		if c.Type == t {
			oi = append(oi, i)
		}
	}
	for i, c := range n.Status.Conditions {
		if c.Type == t {
			ni = append(ni, i)
		}
	}
	if len(oi) != len(ni) {
		return
	}
	for i, idx := range oi {
		n.Status.Conditions[ni[i]] = o.Status.Conditions[idx]
	}
}

// conditionTimestamps is upstream's populateConditionTimestamps: missing
// times are now, but a condition whose type and status are unchanged
// keeps its transition time.
func conditionTimestamps(n, o *csr, now metav1.Time) {
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = now
		for _, oc := range o.Status.Conditions {
			if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
				c.LastTransitionTime = oc.LastTransitionTime
				break
			}
		}
	}
}

// isCertificatesPlugin says name is one of the plugins of
// CertificateSigningRequests (certificatesPlugin builds it).
func isCertificatesPlugin(name string) bool {
	return name == PluginCertificateApproval || name == PluginCertificateSigning || name == PluginCertificateSubjectRestriction
}

// certificatesPlugin returns upstream's plugin name
// (plugin/pkg/admission/certificates/{approval,signing,subjectrestriction}):
// approving needs the verb "approve" on the request's signer, setting the
// certificate or conditions through /status the verb "sign", and no
// kube-apiserver-client request may ask for system:masters.
func certificatesPlugin(name string) registry.AdmissionPlugin {
	csrs := certificatesv1.Resource("certificatesigningrequests")
	signerCheck := func(subresource, verb string, changed func(n, o *csr) bool) func(context.Context, admission.Attributes) error {
		return func(ctx context.Context, a admission.Attributes) error {
			if a.GetSubresource() != subresource || a.GetResource().GroupResource() != csrs {
				return nil
			}
			// The old object's signer: the request cannot change it.
			o, ok := a.GetOldObject().(*csr)
			if !ok {
				return admission.NewForbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetOldObject()))
			}
			n, ok := a.GetObject().(*csr)
			if !ok {
				return admission.NewForbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetObject()))
			}
			if !changed(n, o) || authorizedForSigner(ctx, a.GetUserInfo(), verb, o.Spec.SignerName) {
				return nil
			}
			return admission.NewForbidden(a, fmt.Errorf("user not permitted to %s requests with signerName %q", verb, o.Spec.SignerName))
		}
	}
	onUpdate := func(op admission.Operation) bool { return op == admission.Update }
	switch name {
	case PluginCertificateApproval:
		return registry.AdmissionPlugin{Name: name, Handles: onUpdate,
			Validate: signerCheck("approval", "approve", func(_, _ *csr) bool { return true })}
	case PluginCertificateSigning:
		return registry.AdmissionPlugin{Name: name, Handles: onUpdate,
			Validate: signerCheck("status", "sign", func(n, o *csr) bool {
				return !bytes.Equal(n.Status.Certificate, o.Status.Certificate) || !apiequality.Semantic.DeepEqual(n.Status.Conditions, o.Status.Conditions)
			})}
	default:
		return registry.AdmissionPlugin{Name: PluginCertificateSubjectRestriction,
			Handles: func(op admission.Operation) bool { return op == admission.Create },
			Validate: func(_ context.Context, a admission.Attributes) error {
				if a.GetResource().GroupResource() != csrs || a.GetSubresource() != "" {
					return nil
				}
				c, ok := a.GetObject().(*csr)
				if !ok {
					return admission.NewForbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetObject()))
				}
				if c.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
					return nil
				}
				req, err := validation.ParseCSR(c.Spec.Request)
				if err != nil {
					return admission.NewForbidden(a, fmt.Errorf("failed to parse CSR: %w", err))
				}
				if slices.Contains(req.Subject.Organization, user.SystemPrivilegedGroup) {
					return admission.NewForbidden(a, fmt.Errorf("use of %s signer with system:masters group is not allowed", certificatesv1.KubeAPIServerClientSignerName))
				}
				return nil
			}}
	}
}

// authorizedForSigner is upstream's certauthorization.IsAuthorizedForSignerName:
// verb on the signer "<domain>/<path>" or on "<domain>/*" (resource
// "signers" of certificates.k8s.io). Without an authorizer in the context
// (a server without authorization) everything is allowed.
func authorizedForSigner(ctx context.Context, u user.Info, verb, signerName string) bool {
	a, ok := AuthorizationFrom(ctx)
	if !ok {
		return true
	}
	domain, _, _ := strings.Cut(signerName, "/")
	for _, name := range []string{signerName, domain + "/*"} {
		d, _, err := a.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: verb, Name: name, APIGroup: certificatesv1.GroupName, APIVersion: "*",
			Resource: "signers", ResourceRequest: true,
		})
		if err == nil && d == authorizer.DecisionAllow {
			return true
		}
	}
	return false
}
