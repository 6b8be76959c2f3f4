package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
)

var seq atomic.Int64

func unique(base string) string { return fmt.Sprintf("%s-%d", base, seq.Add(1)) }

// run starts a Manager for a new node until the test ends.
func run(t *testing.T, opts Options) (*Manager, kubernetes.Interface) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	opts.Client = cs
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case <-m.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("node not registered within 10s")
	}
	return m, cs
}

// eventually polls f every 20 ms for up to 10 s.
func eventually(t *testing.T, what string, f func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var ok bool
		if ok, last = f(); ok {
			return
		}
	}
	t.Fatalf("%s: not within 10s; last: %s", what, last)
}

func TestManagerRegistersTheNodeAsTheKubeletDoes(t *testing.T) {
	name := unique("reg")
	_, cs := run(t, Options{NodeName: name, RootDir: t.TempDir(), RuntimeVersion: "kite-process://v1", Port: 10251, Labels: map[string]string{"role": "test"}})
	n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{v1.LabelHostname: name, v1.LabelOSStable: "linux", v1.LabelArchStable: n.Status.NodeInfo.Architecture, "role": "test"} {
		if n.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], want)
		}
	}
	if got := n.Status.Capacity.Pods().Value(); got != 110 {
		t.Errorf("capacity.pods = %d", got)
	}
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := n.Status.Allocatable[r]; !ok || q.Sign() <= 0 {
			t.Errorf("allocatable %s = %v", r, q.String())
		}
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10251 {
		t.Errorf("daemon port %d", n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}
	if n.Status.NodeInfo.ContainerRuntimeVersion != "kite-process://v1" || n.Status.NodeInfo.KubeletVersion == "" || n.Status.NodeInfo.KernelVersion == "" {
		t.Errorf("nodeInfo %+v", n.Status.NodeInfo)
	}
	if len(n.Status.Addresses) != 2 || n.Status.Addresses[0].Type != v1.NodeInternalIP || n.Status.Addresses[1] != (v1.NodeAddress{Type: v1.NodeHostName, Address: name}) {
		t.Errorf("addresses %v", n.Status.Addresses)
	}
	if c := condition(n.Status, v1.NodeReady); c.Status != v1.ConditionTrue || c.Reason != ReasonReady {
		t.Errorf("Ready %+v", c)
	}
}

// TestManagerReportsDiskPressureByItsThresholds measures the file system
// of the root directory: a nodefs.available threshold above what any disk
// has free (99.9%) reports DiskPressure, and "0%" (the threshold switched
// off, as kind's nodes run) never does.
func TestManagerReportsDiskPressureByItsThresholds(t *testing.T) {
	for _, tc := range []struct {
		threshold string
		want      v1.ConditionStatus
	}{{"99.9%", v1.ConditionTrue}, {"0%", v1.ConditionFalse}} {
		t.Run(tc.threshold, func(t *testing.T) {
			hard, err := ParseEvictionHard(map[string]string{SignalNodeFsAvailable: tc.threshold})
			if err != nil {
				t.Fatal(err)
			}
			name := unique("disk")
			_, cs := run(t, Options{NodeName: name, RootDir: t.TempDir(), EvictionHard: hard})
			n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c := condition(n.Status, v1.NodeDiskPressure); c.Status != tc.want {
				t.Errorf("DiskPressure %+v, want %s", c, tc.want)
			}
		})
	}
}

// TestManagerHoldsAPressureForTheTransitionPeriod reads the node's memory
// from a procfs directory of the test's: MemoryPressure comes with the
// first status under the threshold, stays while memory is free again for
// the transition period (1.5 s here; the kubelet's 5 minutes by default),
// then clears. It fails if the pressure clears at the first status above
// the threshold, as it did before the period was kept.
func TestManagerHoldsAPressureForTheTransitionPeriod(t *testing.T) {
	proc := t.TempDir()
	meminfo := func(availableMiB int) {
		t.Helper()
		data := fmt.Sprintf("MemTotal:       8388608 kB\nMemAvailable:   %d kB\n", availableMiB*1024)
		if err := os.WriteFile(filepath.Join(proc, "meminfo"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	meminfo(50)
	hard, err := ParseEvictionHard(map[string]string{SignalMemoryAvailable: "100Mi"})
	if err != nil {
		t.Fatal(err)
	}
	const period = 1500 * time.Millisecond
	name := unique("hold")
	_, cs := run(t, Options{NodeName: name, Host: Host{Proc: proc}, NodeIP: net.IPv4(10, 0, 0, 9), EvictionHard: hard,
		UpdateInterval: 50 * time.Millisecond, PressureTransitionPeriod: period})
	pressure := func() v1.ConditionStatus {
		n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return condition(n.Status, v1.NodeMemoryPressure).Status
	}
	if got := pressure(); got != v1.ConditionTrue {
		t.Fatalf("MemoryPressure %s with 50Mi available under a 100Mi threshold, want True", got)
	}
	meminfo(4096)
	freed := time.Now()
	for time.Since(freed) < period-300*time.Millisecond {
		if got := pressure(); got != v1.ConditionTrue {
			t.Fatalf("MemoryPressure %s %v after memory was freed, want True for the %v transition period", got, time.Since(freed), period)
		}
		time.Sleep(50 * time.Millisecond)
	}
	eventually(t, "MemoryPressure cleared after the transition period", func() (bool, string) {
		got := pressure()
		return got == v1.ConditionFalse, string(got)
	})
}

// TestManagerKeepsALeaseOwnedByTheNode runs with a 1 s Lease, as
// nodeLeaseDurationSeconds sets it: the renew interval is a quarter of it.
func TestManagerKeepsALeaseOwnedByTheNode(t *testing.T) {
	name := unique("lease")
	_, cs := run(t, Options{NodeName: name, LeaseDurationSeconds: 1})
	n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var first time.Time
	eventually(t, "lease renewed", func() (bool, string) {
		l, err := cs.CoordinationV1().Leases(LeaseNamespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if *l.Spec.HolderIdentity != name || *l.Spec.LeaseDurationSeconds != 1 {
			t.Fatalf("lease spec %+v", l.Spec)
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != n.UID || l.OwnerReferences[0].Kind != "Node" {
			t.Fatalf("lease owners %+v", l.OwnerReferences)
		}
		if first.IsZero() {
			first = l.Spec.RenewTime.Time
		}
		return l.Spec.RenewTime.After(first), fmt.Sprint(l.Spec.RenewTime)
	})
}

func TestManagerPatchesTheStatusWhenHealthChanges(t *testing.T) {
	name := unique("health")
	var down atomic.Bool
	_, cs := run(t, Options{NodeName: name, UpdateInterval: 30 * time.Millisecond, Health: func(context.Context) ([]string, []v1.NodeCondition) {
		if down.Load() {
			return []string{"container runtime is down"}, []v1.NodeCondition{{Type: "ResourceLimits", Reason: "NoWritableCgroup", Message: "no cgroup"}}
		}
		return nil, nil
	}})
	ready := func(want v1.ConditionStatus, msg string) func() (bool, string) {
		return func() (bool, string) {
			n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := condition(n.Status, v1.NodeReady)
			degraded := condition(n.Status, "ResourceLimits")
			if (want == v1.ConditionFalse) != (degraded.Reason == "NoWritableCgroup" && degraded.Status == v1.ConditionFalse) {
				return false, fmt.Sprintf("ResourceLimits %+v", degraded)
			}
			return c.Status == want && c.Message == msg, fmt.Sprintf("%+v", c)
		}
	}
	down.Store(true)
	eventually(t, "Ready=False", ready(v1.ConditionFalse, "container runtime is down"))
	down.Store(false)
	eventually(t, "Ready=True again", ready(v1.ConditionTrue, MessageReady))
}

func TestManagerKeepsLabelsOfAnExistingNodeAndRegistersADeletedOneAgain(t *testing.T) {
	name := unique("existing")
	cs, err := kubernetes.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: "custom"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run(t, Options{NodeName: name, UpdateInterval: 30 * time.Millisecond, ReportInterval: 30 * time.Millisecond})
	n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels[v1.LabelHostname] != "custom" || n.Labels[v1.LabelOSStable] == "" {
		t.Errorf("labels %v: the existing label must stay, the missing defaults be added", n.Labels)
	}
	if c := condition(n.Status, v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready %+v", c)
	}
	if err := cs.CoreV1().Nodes().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node registered again", func() (bool, string) {
		n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return condition(n.Status, v1.NodeReady).Status == v1.ConditionTrue, "no Ready"
	})
}
