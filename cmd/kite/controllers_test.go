package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
)

// "kite controllers" runs the control loops on their own, against an API
// server that runs none.
func TestControllersCommandWorksAgainstAnAPIServer(t *testing.T) {
	srv, err := kite.Start(t.Context(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", Controllers: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	var outMu sync.Mutex
	root := newRootCommand()
	root.SetOut(&lockedWriter{w: &out, mu: &outMu})
	root.SetArgs([]string{"controllers", "--kubeconfig", srv.KubeconfigPath(), "--controllers", "serviceaccount-controller"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kite controllers: %v", err)
		}
	}()

	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ctl-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = utilwait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no default service account from kite controllers: %v", err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	if !strings.Contains(out.String(), "kite: controllers serviceaccount-controller against "+srv.URL()) {
		t.Fatalf("output %q does not say what runs", out.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
