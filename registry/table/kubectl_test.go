package table_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kite-project/kite/registry/table"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestKubectlGetRendersTables serves a pod list the way the apiserver
// will (legacy discovery plus a Table for kubectl's Accept header) and
// checks what kubectl v1.32 prints.
func TestKubectlGetRendersTables(t *testing.T) {
	const kubectl = "/usr/bin/kubectl"
	if _, err := os.Stat(kubectl); err != nil {
		t.Skipf("kubectl not installed: %v", err)
	}
	real := time.Now()
	pods := &corev1.PodList{Items: []corev1.Pod{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: metav1.NewTime(real.Add(-2 * time.Hour))},
			Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.1.0.4"}},
				ContainerStatuses: []corev1.ContainerStatus{
					{Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
					{RestartCount: 2, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(real.Add(-4 * time.Minute))}}},
				}},
		},
	}}
	// A fixed clock: on a loaded machine a second may pass between
	// building the pods and kubectl's request, which would print "4m1s".
	conv := table.New(table.Options{Now: func() time.Time { return real }})
	var sawTableAccept atomic.Bool
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, ct string, v any) {
		w.Header().Set("Content-Type", ct)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, "application/json", metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, "application/json", metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}})
	})
	mux.HandleFunc("/api/v1", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, "application/json", metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "list"}, ShortNames: []string{"po"}}}})
	})
	mux.HandleFunc("/api/v1/namespaces/default/pods", func(w http.ResponseWriter, r *http.Request) {
		gv, ok := table.Requested(r.Header.Get("Accept"))
		if !ok {
			writeJSON(w, "application/json", pods)
			return
		}
		sawTableAccept.Store(true)
		opts, err := table.ParseQuery(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		opts.GroupVersion = gv
		tbl, err := conv.Convert(pods, opts)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, "application/json;as=Table;v=v1;g=meta.k8s.io", tbl)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "default"}
	cfg.CurrentContext = "x"
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	get := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", path, "get", "pods"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir) // discovery cache under the temp dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get pods %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	tests := []struct {
		args []string
		want [][]string
	}{
		{nil, [][]string{
			{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
			{"web", "1/2", "CrashLoopBackOff", "2", "(4m", "ago)", "120m"},
		}},
		{[]string{"-o", "wide"}, [][]string{
			{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"},
			{"web", "1/2", "CrashLoopBackOff", "2", "(4m", "ago)", "120m", "10.1.0.4", "n1", "<none>", "<none>"},
		}},
	}
	for _, tc := range tests {
		out := get(tc.args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != len(tc.want) {
			t.Fatalf("kubectl get pods %v printed:\n%s", tc.args, out)
		}
		for i, want := range tc.want {
			if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("kubectl get pods %v line %d:\n got %q\nwant %q", tc.args, i, got, want)
			}
		}
	}
	if !sawTableAccept.Load() {
		t.Error("kubectl never asked for a Table")
	}
}
