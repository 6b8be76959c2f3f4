package certificates_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/certificates/cleaner"
)

// grant binds a new ClusterRole of rules to user.
func grant(t *testing.T, name, userName string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	cs, ctx := admin(t), t.Context()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: userName}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// eventuallyAllowed retries call while it is refused: RBAC's caches
// follow a watch, so a binding just made may not be seen yet.
func eventuallyAllowed(t *testing.T, what string, call func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		last = call(ctx)
		return !apierrors.IsForbidden(last), nil
	})
	if err != nil || last != nil {
		t.Fatalf("%s: %v (%v)", what, last, err)
	}
}

var csrRequester = rbacv1.PolicyRule{Verbs: []string{"create", "get", "list", "watch"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"}}

// The requestor fields are the request's user, whatever the client
// sends: nobody can ask for a certificate in another's name.
func TestRequestorIsTheRequestsUser(t *testing.T) {
	grant(t, "csr-requester-alice", "alice", csrRequester)
	csr, _ := newCSR(t, "example.com/signer", pkix.Name{CommonName: "alice"})
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = "kite-admin", "forged", []string{"system:masters"}
	csr.Spec.Extra = map[string]certificatesv1.ExtraValue{"forged": {"yes"}}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	var created *certificatesv1.CertificateSigningRequest
	eventuallyAllowed(t, "alice creates a csr", func(ctx context.Context) (err error) {
		created, err = as(t, "alice").CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		return err
	})
	spec := created.Spec
	if spec.Username != "alice" || spec.UID != "uid-alice" || !slices.Contains(spec.Groups, "team-a") || slices.Contains(spec.Groups, "system:masters") || spec.Extra["forged"] != nil {
		t.Errorf("requestor = %q %q %v %v, want alice's own (uid-alice, team-a, nothing forged)", spec.Username, spec.UID, spec.Groups, spec.Extra)
	}
	if len(created.Status.Conditions) != 0 {
		t.Errorf("a created csr has conditions %v, want none (nobody creates an approved request)", created.Status.Conditions)
	}
	// An update of the main resource changes neither spec nor status.
	upd := created.DeepCopy()
	upd.Spec.Username = "kite-admin"
	upd.Labels = map[string]string{"touched": "yes"}
	got, err := admin(t).CertificatesV1().CertificateSigningRequests().Update(t.Context(), upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Username != "alice" || got.Labels["touched"] != "yes" {
		t.Errorf("after an update: username %q labels %v, want alice and the label", got.Spec.Username, got.Labels)
	}
}

// kubectl certificate approve and deny write the conditions through
// /approval, and kubectl get shows upstream's columns.
func TestKubectlApprovesAndDenies(t *testing.T) {
	cs, ctx := admin(t), t.Context()
	var names []string
	for range 2 {
		csr, _ := newCSR(t, "example.com/signer", pkix.Name{CommonName: "someone"})
		csr.Spec.ExpirationSeconds = ptr.To[int32](3600)
		created, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, created.Name)
	}
	if out, err := kubectl(t, "certificate", "approve", names[0]); err != nil {
		t.Fatalf("kubectl certificate approve: %v\n%s", err, out)
	}
	if out, err := kubectl(t, "certificate", "deny", names[1]); err != nil {
		t.Fatalf("kubectl certificate deny: %v\n%s", err, out)
	}
	for i, want := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, names[i], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != want || got.Status.Conditions[0].LastTransitionTime.IsZero() || got.Status.Conditions[0].LastUpdateTime.IsZero() {
			t.Errorf("%s: conditions %+v, want one %s with its times set", names[i], got.Status.Conditions, want)
		}
	}
	out, err := kubectl(t, "get", "csr", names[0], names[1])
	if err != nil {
		t.Fatalf("kubectl get csr: %v\n%s", err, out)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION" {
		t.Fatalf("kubectl get csr:\n%s\nwant upstream's columns and two rows", out)
	}
	for i, want := range []string{"Approved", "Denied"} {
		f := strings.Fields(lines[i+1])
		if f[0] != names[i] || f[2] != "example.com/signer" || f[3] != "kite-admin" || f[4] != "60m" || f[5] != want {
			t.Errorf("row %q, want %s example.com/signer kite-admin 60m %s", lines[i+1], names[i], want)
		}
	}
	// Approval conditions never change through the main resource or
	// /status, and Approved and Denied exclude each other.
	got, _ := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, names[0], metav1.GetOptions{})
	got.Status.Conditions = append(got.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue})
	if _, err := cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, names[0], got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Approved and Denied conditions are mutually exclusive") {
		t.Errorf("denying an approved csr: %v, want 422 mutually exclusive", err)
	}
	got.Status.Conditions = nil
	if _, err := cs.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `updates may not remove a condition of type "Approved"`) {
		t.Errorf("removing Approved through /status: %v, want 422", err)
	}
}

// Approving needs the verb approve on the request's signer (or its
// domain's "*"), besides update on certificatesigningrequests/approval.
func TestApprovingNeedsApproveOnTheSigner(t *testing.T) {
	cs, ctx := admin(t), t.Context()
	csr, _ := newCSR(t, "example.com/signer", pkix.Name{CommonName: "someone"})
	created, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	approve := func(ctx context.Context) error {
		c, err := as(t, "bob").CertificatesV1().CertificateSigningRequests().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "ByBob"})
		_, err = as(t, "bob").CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, c, metav1.UpdateOptions{})
		return err
	}
	if err := approve(ctx); !apierrors.IsForbidden(err) {
		t.Fatalf("bob, with no rights, approves: %v, want 403", err)
	}
	grant(t, "csr-approval-bob", "bob", rbacv1.PolicyRule{Verbs: []string{"get", "update"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval"}})
	want := `user not permitted to approve requests with signerName "example.com/signer"`
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		err := approve(ctx)
		if err == nil {
			return false, err
		}
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), want), nil
	}); err != nil {
		t.Fatalf("bob, who may update /approval but not approve for the signer: never got 403 %q: %v", want, err)
	}
	grant(t, "csr-approver-bob", "bob", rbacv1.PolicyRule{Verbs: []string{"approve"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}})
	eventuallyAllowed(t, "bob approves with approve on example.com/*", approve)
}

// The signer issues what was asked for, for as long as asked (at least
// 10 minutes), and the certificate authenticates as its subject.
func TestSignedCertificateAuthenticatesAsItsSubject(t *testing.T) {
	cs, ctx := admin(t), t.Context()
	csr, key := newCSR(t, certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "jane", Organization: []string{"devs"}})
	csr.Spec.ExpirationSeconds = ptr.To[int32](600)
	created, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(t, "certificate", "approve", created.Name); err != nil {
		t.Fatalf("kubectl certificate approve: %v\n%s", err, out)
	}
	issued := waitFor(t, cs, created.Name, "issued", func(c *certificatesv1.CertificateSigningRequest) bool { return len(c.Status.Certificate) > 0 })
	block, _ := pem.Decode(issued.Status.Certificate)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if life := time.Until(cert.NotAfter); life < 9*time.Minute || life > 11*time.Minute {
		t.Errorf("certificate lives %v more, want the 10 minutes asked for", life)
	}
	if cert.IsCA || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("certificate: CA %v, extended usages %v; want a client certificate", cert.IsCA, cert.ExtKeyUsage)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := shared.RESTConfig()
	cfg.BearerToken, cfg.CertData, cfg.KeyData = "", issued.Status.Certificate, keyPEM
	review, err := clientset(t, cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "jane" || !slices.Contains(u.Groups, "devs") {
		t.Errorf("the issued certificate authenticates as %q %v, want jane in devs", u.Username, u.Groups)
	}
}

// Node client requests: the approver approves those whose requestor may
// create nodeclient requests (here the admin) and leaves the others; the
// signer fails one that is not a node's client certificate.
func TestNodeClientRequests(t *testing.T) {
	cs, ctx := admin(t), t.Context()
	node := pkix.Name{CommonName: "system:node:csr-node", Organization: []string{"system:nodes"}}
	byAdmin, _ := newCSR(t, certificatesv1.KubeAPIServerClientKubeletSignerName, node)
	created, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, byAdmin, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, cs, created.Name, "auto-approved and issued", func(c *certificatesv1.CertificateSigningRequest) bool { return len(c.Status.Certificate) > 0 })
	if c := got.Status.Conditions; len(c) != 1 || c[0].Type != certificatesv1.CertificateApproved || c[0].Reason != "AutoApproved" {
		t.Errorf("conditions %+v, want AutoApproved", c)
	}

	grant(t, "csr-requester-alice-node", "alice", csrRequester)
	byAlice, _ := newCSR(t, certificatesv1.KubeAPIServerClientKubeletSignerName, node)
	var mine *certificatesv1.CertificateSigningRequest
	eventuallyAllowed(t, "alice creates a csr", func(ctx context.Context) (err error) {
		mine, err = as(t, "alice").CertificatesV1().CertificateSigningRequests().Create(ctx, byAlice, metav1.CreateOptions{})
		return err
	})
	if err := shared.Controllers().WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, mine.Name, metav1.GetOptions{}); len(got.Status.Conditions) != 0 {
		t.Errorf("alice's node client request (she may not create nodeclient requests) has conditions %+v, want it pending", got.Status.Conditions)
	}

	wrong, _ := newCSR(t, certificatesv1.KubeAPIServerClientKubeletSignerName, pkix.Name{CommonName: "system:node:csr-node", Organization: []string{"devs"}})
	created, err = cs.CertificatesV1().CertificateSigningRequests().Create(ctx, wrong, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(t, "certificate", "approve", created.Name); err != nil {
		t.Fatalf("kubectl certificate approve: %v\n%s", err, out)
	}
	got = waitFor(t, cs, created.Name, "failed", func(c *certificatesv1.CertificateSigningRequest) bool {
		return slices.ContainsFunc(c.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
			return c.Type == certificatesv1.CertificateFailed && c.Reason == "SignerValidationFailure" && strings.Contains(c.Message, "subject organization is not system:nodes")
		})
	})
	if len(got.Status.Certificate) != 0 {
		t.Error("a failed request has a certificate")
	}
}

// Nobody gets system:masters through the kube-apiserver-client signer
// (CertificateSubjectRestriction), not even an administrator.
func TestNoSystemMastersFromTheClientSigner(t *testing.T) {
	csr, _ := newCSR(t, certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "root", Organization: []string{"system:masters"}})
	_, err := admin(t).CertificatesV1().CertificateSigningRequests().Create(t.Context(), csr, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed") {
		t.Fatalf("create: %v, want upstream's 403", err)
	}
}

// The cleaner deletes a denied request an hour after, and leaves a
// pending one for a day.
func TestCleanerDeletesSettledRequests(t *testing.T) {
	cs, ctx := admin(t), t.Context()
	var names []string
	for range 2 {
		csr, _ := newCSR(t, "example.com/signer", pkix.Name{CommonName: "someone"})
		created, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, created.Name)
	}
	if out, err := kubectl(t, "certificate", "deny", names[0]); err != nil {
		t.Fatalf("kubectl certificate deny: %v\n%s", err, out)
	}
	// Two hours from now, as the cleaner sees it.
	c, err := cleaner.New(cleaner.Options{Client: cs, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, names[0], metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the denied csr was not cleaned: %v", err)
	}
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, names[1], metav1.GetOptions{}); err != nil {
		t.Errorf("the pending csr, 2 hours old: %v, want it kept a day", err)
	}
}
