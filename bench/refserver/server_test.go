package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite/workload"
)

// TestWorkloadsAgainstTheReference runs every kite bench workload at a
// tiny size against the reference server, in JSON and protobuf, and the
// custom-resource comparison: the reference must serve everything the
// bench asks of a server. No goleak
// here: k8s.io/apiserver's generic server leaves goroutines behind after
// it stops (its own, and klog's).
func TestWorkloadsAgainstTheReference(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, options{dataDir: dir, unsafeNoFsync: true}, w)
		w.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (run: %v)", err, <-done)
	}
	go io.Copy(io.Discard, r)
	path := strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	// Count connections: the server must keep them open across requests,
	// or every request pays a TLS handshake and the figures measure that.
	var dials atomic.Int64
	var dialer net.Dialer
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	for _, contentType := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		cfg.ContentType = contentType
		report, err := workload.Run(ctx, cfg, workload.Options{
			Pods: 30, Nodes: 3, Writers: 3, Watchers: 4, Updates: 6, Repeats: 1, DeliveryTimeout: time.Minute,
		})
		if err != nil {
			t.Fatalf("%s: %v", contentType, err)
		}
		for _, res := range report.Results {
			if d := res.Delivery; d != nil && (d.Lost != 0 || d.Duplicates != 0 || d.Expected == 0) {
				t.Errorf("%s: %s: %+v", contentType, res.Name, d)
			}
		}
		if m := report.Memory; m == nil || m.RSSAfter <= 0 {
			t.Errorf("%s: memory %+v, want process_resident_memory_bytes", contentType, m)
		}
	}
	podDials := dials.Load()
	// Custom resources through upstream's apiextensions server: the
	// custom-resource comparison runs against it as against Kite, and its
	// BenchPods and pods are stored the same size.
	cfg.ContentType = ""
	report, err := workload.RunCustomResources(ctx, cfg, workload.Options{
		Pods: 20, Nodes: 3, Writers: 3, Watchers: 4, Updates: 6, Repeats: 1, DeliveryTimeout: time.Minute,
	}, false)
	if err != nil {
		t.Fatalf("custom resources: %v", err)
	}
	for _, c := range report.Comparison {
		if c.Measure == "list item size (JSON)" && (c.Ratio < 0.95 || c.Ratio > 1.15) {
			t.Errorf("custom resources: list items of %.0f B against pods' %.0f B, want about the same size", c.CustomResources, c.Pods)
		}
		if c.Measure == "lost events" && (c.Pods != 0 || c.CustomResources != 0) {
			t.Errorf("custom resources: lost events %+v", c)
		}
	}
	// Pods are stored as kube-apiserver stores them: defaulted at decode
	// (and managedFields name the defaults), status set on create.
	client := kubernetes.NewForConfigOrDie(cfg)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "defaulted", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
	got, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Spec.Containers[0]
	if got.Spec.RestartPolicy != corev1.RestartPolicyAlways || got.Spec.DNSPolicy != corev1.DNSClusterFirst ||
		c.TerminationMessagePath != corev1.TerminationMessagePathDefault || c.ImagePullPolicy != corev1.PullIfNotPresent ||
		got.Status.Phase != corev1.PodPending || got.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("stored pod not defaulted as upstream: restartPolicy %q dnsPolicy %q terminationMessagePath %q imagePullPolicy %q phase %q qos %q",
			got.Spec.RestartPolicy, got.Spec.DNSPolicy, c.TerminationMessagePath, c.ImagePullPolicy, got.Status.Phase, got.Status.QOSClass)
	}
	// Containers are a map list keyed by name, as upstream's OpenAPI
	// markers say: managedFields name each container's fields.
	if len(got.ManagedFields) != 1 || !strings.Contains(string(got.ManagedFields[0].FieldsV1.Raw), `"f:dnsPolicy"`) ||
		!strings.Contains(string(got.ManagedFields[0].FieldsV1.Raw), `"k:{\"name\":\"c\"}":{".":{},"f:image":{}`) {
		t.Errorf("managedFields %s, want one entry that names the defaulted dnsPolicy and container c's fields", got.ManagedFields[0].FieldsV1.Raw)
	}
	if n := podDials; n > 4 {
		t.Errorf("the client opened %d connections; want a few reused ones", n)
	}
}
