package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite"
)

// TestKubeconfigCommandWritesAWorkingUser: "kite kubeconfig --user" gives
// a kubeconfig whose client certificate the server takes as that user in
// those groups, to a file or to standard output.
func TestKubeconfigCommandWritesAWorkingUser(t *testing.T) {
	dataDir := t.TempDir()
	srv, err := kite.Start(t.Context(), kite.Options{DataDir: dataDir, EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", Controllers: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "frank.kubeconfig")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"to a file", []string{"-o", file}},
		{"to standard output", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := newRootCommand()
			cmd.SetOut(&out)
			cmd.SetArgs(append([]string{"kubeconfig", "--data-dir", dataDir, "--user", "frank", "--group", "devs", "--group", "system:masters"}, tc.args...))
			if err := cmd.ExecuteContext(t.Context()); err != nil {
				t.Fatal(err)
			}
			var cc clientcmd.ClientConfig
			if tc.args != nil {
				cc = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: file}, nil)
			} else {
				var err error
				if cc, err = clientcmd.NewClientConfigFromBytes(out.Bytes()); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := cc.ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != srv.URL() || cfg.BearerToken != "" {
				t.Errorf("host %q token %q: want the server's URL and no token", cfg.Host, cfg.BearerToken)
			}
			cs := kubernetes.NewForConfigOrDie(cfg)
			r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := r.Status.UserInfo
			slices.Sort(got.Groups)
			if want := []string{"devs", "system:authenticated", "system:masters"}; got.Username != "frank" || !slices.Equal(got.Groups, want) {
				t.Errorf("user %q groups %q, want frank %q", got.Username, got.Groups, want)
			}
		})
	}
	t.Run("no user", func(t *testing.T) {
		cmd := newRootCommand()
		cmd.SetArgs([]string{"kubeconfig", "--data-dir", dataDir})
		if err := cmd.ExecuteContext(t.Context()); err == nil || err.Error() != "--user is required" {
			t.Errorf("error %v, want --user is required", err)
		}
	})
	t.Run("no CA", func(t *testing.T) {
		cmd := newRootCommand()
		cmd.SetArgs([]string{"kubeconfig", "--data-dir", t.TempDir(), "--user", "x", "--server", "https://127.0.0.1:1"})
		if err := cmd.ExecuteContext(t.Context()); err == nil {
			t.Error("a data directory without a CA gave a kubeconfig")
		}
	})
}

func TestAuthenticationFlagsReachTheOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want kite.AuthenticationOptions
	}{
		{nil, kite.AuthenticationOptions{ServiceAccountIssuer: "https://kubernetes.default.svc.cluster.local"}},
		{[]string{"--service-account-issuer", "https://issuer.test", "--service-account-signing-key-file", "/k/sa.key",
			"--service-account-key-file", "/k/old.pub,/k/older.pub", "--anonymous-auth=false"},
			kite.AuthenticationOptions{ServiceAccountIssuer: "https://issuer.test", ServiceAccountSigningKeyFile: "/k/sa.key",
				ServiceAccountKeyFiles: []string{"/k/old.pub", "/k/older.pub"}, DisableAnonymousAuth: true}},
	} {
		got := apiOptions(t, tc.args).Authentication
		if got.ServiceAccountIssuer != tc.want.ServiceAccountIssuer || got.ServiceAccountSigningKeyFile != tc.want.ServiceAccountSigningKeyFile ||
			!slices.Equal(got.ServiceAccountKeyFiles, tc.want.ServiceAccountKeyFiles) || got.DisableAnonymousAuth != tc.want.DisableAnonymousAuth {
			t.Errorf("%v: %+v, want %+v", tc.args, got, tc.want)
		}
	}
}
