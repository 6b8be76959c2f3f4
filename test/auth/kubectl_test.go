package auth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kite-project/kite/apiserver/authn/serviceaccount"
)

const kubectlPath = "/usr/bin/kubectl"

// kubectlWhoami runs "kubectl auth whoami -o json" with kubeconfig and
// args and returns the user it prints.
func kubectlWhoami(t *testing.T, kubeconfig string, args ...string) authenticationv1.UserInfo {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", kubeconfig, "auth", "whoami", "-o", "json"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl auth whoami %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var review authenticationv1.SelfSubjectReview
	if err := json.Unmarshal(out, &review); err != nil {
		t.Fatalf("kubectl auth whoami: %v\n%s", err, out)
	}
	return review.Status.UserInfo
}

// userKubeconfig writes a kubeconfig for a client certificate user of
// the shared server.
func userKubeconfig(t *testing.T, name string, groups []string) string {
	t.Helper()
	cfg, err := shared.AddUser(name, groups)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kite"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["kite"] = &clientcmdapi.Context{Cluster: "kite", AuthInfo: name}
	kc.CurrentContext = "kite"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKubectlAuthWhoami(t *testing.T) {
	ns, _ := namespace(t, "kubectl-whoami")
	tr, err := requestToken(t, ns, "sa", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kubeconfig string
		args             []string
		wantUser         string
		wantGroups       []string
	}{
		{"admin", shared.KubeconfigPath(), nil, "kite-admin", []string{"system:masters", "system:authenticated"}},
		{"client certificate user", userKubeconfig(t, "carol", []string{"ops"}), nil, "carol", []string{"ops", "system:authenticated"}},
		{"service account token", shared.KubeconfigPath(), []string{"--token", tr.Status.Token}, "system:serviceaccount:" + ns + ":sa",
			[]string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}},
		// Impersonation: the admin (system:masters) may impersonate anyone.
		{"admin as a user and group", shared.KubeconfigPath(), []string{"--as", "dave", "--as-group", "testers"}, "dave", []string{"testers", "system:authenticated"}},
		{"admin as a service account", shared.KubeconfigPath(), []string{"--as", "system:serviceaccount:" + ns + ":sa"}, "system:serviceaccount:" + ns + ":sa",
			[]string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := kubectlWhoami(t, tc.kubeconfig, tc.args...)
			if got.Username != tc.wantUser || !slices.Equal(got.Groups, tc.wantGroups) {
				t.Errorf("user %q groups %q, want %q %q", got.Username, got.Groups, tc.wantUser, tc.wantGroups)
			}
		})
	}
}

// TestKubectlAuthWhoamiAsAnonymousIsForbidden: system:anonymous may not
// create selfsubjectreviews (system:basic-user is bound to
// system:authenticated only), so kubectl says what it says against
// kube-apiserver.
func TestKubectlAuthWhoamiAsAnonymousIsForbidden(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "kubectl", "--kubeconfig", shared.KubeconfigPath(), "auth", "whoami", "--as", "system:anonymous").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "you do not have permission to call it") {
		t.Errorf("kubectl auth whoami --as system:anonymous: %v: %s; want a refusal", err, out)
	}
}

// TestImpersonationExtrasAndUID: the extra and UID headers reach the
// impersonated user (client-go's Impersonate config sets them).
func TestImpersonationExtrasAndUID(t *testing.T) {
	cfg := shared.RESTConfig()
	cfg.Impersonate.UserName = "erin"
	cfg.Impersonate.UID = "uid-1"
	cfg.Impersonate.Extra = map[string][]string{"scopes": {"a", "b"}}
	got, err := whoami(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Username != "erin" || got.UID != "uid-1" || !slices.Equal(got.Extra["scopes"], []string{"a", "b"}) || !slices.Equal(got.Groups, []string{"system:authenticated"}) {
		t.Errorf("impersonated user %+v", got)
	}
}

// TestServiceAccountIssuerDiscovery: the OIDC documents are served to
// ServiceAccounts (system:service-account-issuer-discovery is bound to
// system:serviceaccounts, as upstream) and refused to anonymous requests,
// name the issuer, and list the key that signs TokenRequest tokens.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	cfg := shared.RESTConfig()
	client := &http.Client{Transport: transportTrusting(t, cfg.CAData)}
	readerNS, _ := namespace(t, "issuer-discovery-reader")
	reader, err := requestToken(t, readerNS, "sa", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := client.Get(shared.URL() + serviceaccount.OpenIDConfigPath); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s without credentials: %d, want 403", serviceaccount.OpenIDConfigPath, resp.StatusCode)
		}
	}
	get := func(path string) (map[string]any, http.Header) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, shared.URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+reader.Status.Token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s as a ServiceAccount: %d %s", path, resp.StatusCode, body)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
		return m, resp.Header
	}
	conf, _ := get(serviceaccount.OpenIDConfigPath)
	if conf["issuer"] != serviceaccount.DefaultIssuer || conf["jwks_uri"] != shared.URL()+serviceaccount.JWKSPath {
		t.Errorf("openid-configuration %v", conf)
	}
	keys, h := get(serviceaccount.JWKSPath)
	if ct := h.Get("Content-Type"); ct != "application/jwk-set+json" {
		t.Errorf("jwks content type %q", ct)
	}
	ns, _ := namespace(t, "issuer-discovery")
	tr, err := requestToken(t, ns, "sa", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	header, _ := base64URLJSON(t, strings.Split(tr.Status.Token, ".")[0])
	found := false
	for _, k := range keys["keys"].([]any) {
		key := k.(map[string]any)
		if key["kid"] == header["kid"] && key["alg"] == header["alg"] && key["use"] == "sig" {
			found = true
		}
	}
	if !found {
		t.Errorf("the token's key %v is not in the key set %v", header, keys)
	}
}
