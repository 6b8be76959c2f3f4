package admission_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func plainPod(name string, req, lim v1.ResourceList) *v1.Pod {
	no := false
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{AutomountServiceAccountToken: &no,
		Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}}}}
}

// waitQuota waits until the quota's status is what want says (nil: the
// status has every hard resource) and returns it.
func waitQuota(t *testing.T, client kubernetes.Interface, ns, name string, want v1.ResourceList) *v1.ResourceQuota {
	t.Helper()
	var last *v1.ResourceQuota
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = q
		if len(q.Status.Hard) == 0 || len(q.Status.Used) != len(q.Status.Hard) {
			return false, nil
		}
		for k, v := range want {
			if got, ok := q.Status.Used[k]; !ok || got.Cmp(v) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("quota %s/%s: status %v, want used %v: %v", ns, name, last.Status, want, err)
	}
	return last
}

// TestResourceQuotaCapturesTheLifeOfAPod is the conformance test's flow:
// the controller fills the status, a pod's create is charged, a pod past
// the limit is refused with upstream's message, deleting the pod gives
// its usage back.
func TestResourceQuotaCapturesTheLifeOfAPod(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	ctx := t.Context()
	hard := rl("pods", "1", "requests.cpu", "1", "requests.memory", "500Mi", "limits.cpu", "2", "limits.memory", "1Gi", "count/configmaps", "10")
	if _, err := client.CoreV1().ResourceQuotas(ns).Create(ctx, &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "test-quota"}, Spec: v1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	q := waitQuota(t, client, ns, "test-quota", rl("pods", "0", "requests.cpu", "0"))
	if len(q.Status.Hard) != len(hard) {
		t.Errorf("status.hard %v, want spec.hard", q.Status.Hard)
	}

	pod := plainPod("pod", rl("cpu", "500m", "memory", "252Mi"), rl("cpu", "1", "memory", "400Mi"))
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Admission charged it before the create returned.
	q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, "test-quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Status.Used[v1.ResourceRequestsCPU]; got.String() != "500m" {
		t.Errorf("used requests.cpu %s right after the create, want 500m", got.String())
	}
	_, err = client.CoreV1().Pods(ns).Create(ctx, plainPod("second", rl("cpu", "100m", "memory", "10Mi"), rl("cpu", "100m", "memory", "10Mi")), metav1.CreateOptions{})
	want := `pods "second" is forbidden: exceeded quota: test-quota, requested: pods=1, used: pods=1, limited: pods=1`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}
	_, err = client.CoreV1().Pods(ns).Create(ctx, plainPod("unbounded", nil, nil), metav1.CreateOptions{})
	want = `pods "unbounded" is forbidden: failed quota: test-quota: must specify limits.cpu for: c; limits.memory for: c; requests.cpu for: c; requests.memory for: c`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}

	if err := client.CoreV1().Pods(ns).Delete(ctx, "pod", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitQuota(t, client, ns, "test-quota", rl("pods", "0", "requests.cpu", "0", "requests.memory", "0", "limits.cpu", "0", "limits.memory", "0"))
}

// TestResourceQuotaHoldsUnderConcurrentCreates: creates racing for the
// last places of a quota never pass its limit together (admission charges
// the quota with optimistic concurrency), and a deletion frees a place.
func TestResourceQuotaHoldsUnderConcurrentCreates(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	ctx := t.Context()
	if _, err := client.CoreV1().ResourceQuotas(ns).Create(ctx, &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: v1.ResourceQuotaSpec{Hard: rl("configmaps", "5")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQuota(t, client, ns, "q", nil)
	// A dry-run create is checked and charges nothing.
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := q.Status.Used[v1.ResourceConfigMaps]; !used.IsZero() {
		t.Fatalf("a dry-run create charged the quota: used %s", used.String())
	}
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		})
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: q"):
			t.Errorf("unexpected error: %v", err)
		}
	}
	list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The namespace's kube-root-ca.crt is not published here (no
	// publisher runs): every configmap is one of ours.
	if created != 5 || len(list.Items) != 5 {
		t.Fatalf("%d creates passed, %d configmaps stored; the quota allows 5", created, len(list.Items))
	}
	// A deletion gives its place back (the controller watches what its
	// quotas count).
	if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, list.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQuota(t, client, ns, "q", rl("configmaps", "4"))
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "again"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("create after a deletion: %v", err)
	}
}

// TestLimitRangeDefaultsAndLimitsPods: the conformance test's flow with
// kubectl: a LimitRange's defaults (completed as upstream) fill a pod's
// resources, and a pod past its max is refused with upstream's message.
func TestLimitRangeDefaultsAndLimitsPods(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	ctx := t.Context()
	manifest := `apiVersion: v1
kind: LimitRange
metadata:
  name: limits
spec:
  limits:
  - type: Container
    min: {cpu: 100m, memory: 100Mi}
    max: {cpu: 500m, memory: 500Mi}
    defaultRequest: {cpu: 200m, memory: 200Mi}
    default: {cpu: 300m}
`
	if out, err := kubectl(t, manifest, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, out)
	}
	lr, err := client.CoreV1().LimitRanges(ns).Get(ctx, "limits", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lr.Spec.Limits[0].Default[v1.ResourceMemory]; got.String() != "500Mi" {
		t.Errorf("stored default memory %s, want the max 500Mi", got.String())
	}
	pod, err := client.CoreV1().Pods(ns).Create(ctx, plainPod("defaulted", nil, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := pod.Spec.Containers[0].Resources
	if got := res.Requests[v1.ResourceCPU]; got.String() != "200m" {
		t.Errorf("request cpu %s, want 200m", got.String())
	}
	if got := res.Limits[v1.ResourceMemory]; got.String() != "500Mi" {
		t.Errorf("limit memory %s, want 500Mi", got.String())
	}
	if pod.Annotations["kubernetes.io/limit-ranger"] != "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c" {
		t.Errorf("annotation %q", pod.Annotations["kubernetes.io/limit-ranger"])
	}
	_, err = client.CoreV1().Pods(ns).Create(ctx, plainPod("big", rl("cpu", "200m", "memory", "200Mi"), rl("cpu", "600m", "memory", "200Mi")), metav1.CreateOptions{})
	want := `pods "big" is forbidden: maximum cpu usage per Container is 500m, but limit is 600m`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}
}

func privilegedPod(name string) *v1.Pod {
	p := plainPod(name, nil, nil)
	p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true)}
	return p
}

// TestPodSecurityFromNamespaceLabels: unlabelled namespaces are
// privileged; enforce refuses with upstream's message, warn answers with
// Warning headers, and labelling a namespace warns about its pods.
func TestPodSecurityFromNamespaceLabels(t *testing.T) {
	cfg := config(t)
	w := &warnings{}
	cfg.WarningHandler = w
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	ns := newNamespace(t, client)
	if _, err := client.CoreV1().Pods(ns).Create(ctx, privilegedPod("privileged"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("privileged pod in an unlabelled namespace: %v", err)
	}
	// The namespace check lists the pods it warns about from the cache, as
	// upstream's lists them from an informer: wait until the cache has it.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		return err == nil && len(l.Items) == 1, nil
	}); err != nil {
		t.Fatalf("pod privileged not in the cache: %v", err)
	}

	// Labelling the namespace warns about the pod it would now refuse.
	nsObj, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	if _, err := client.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	got := strings.Join(w.list, "\n")
	w.list = nil
	w.mu.Unlock()
	if !strings.Contains(got, `existing pods in namespace "`+ns+`" violate the new PodSecurity enforce level "baseline:latest"`) || !strings.Contains(got, "privileged: privileged") {
		t.Errorf("warnings %q, want upstream's about the existing pod", got)
	}
	// The plugin reads the namespace's labels from the cache, as
	// upstream's from its informer: wait until the cache has the label.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{ResourceVersion: "0"})
		return err == nil && n.Labels["pod-security.kubernetes.io/enforce"] == "baseline", nil
	}); err != nil {
		t.Fatalf("namespace %s's label not in the cache: %v", ns, err)
	}
	_, err = client.CoreV1().Pods(ns).Create(ctx, privilegedPod("refused"), metav1.CreateOptions{})
	want := `pods "refused" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}

	warned := newNamespace(t, client)
	nsObj, err = client.CoreV1().Namespaces().Get(ctx, warned, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["pod-security.kubernetes.io/warn"] = "restricted"
	nsObj.Labels["pod-security.kubernetes.io/warn-version"] = "v1.30"
	if _, err := client.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As above: the plugin decides by the cache's labels.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Namespaces().Get(ctx, warned, metav1.GetOptions{ResourceVersion: "0"})
		return err == nil && n.Labels["pod-security.kubernetes.io/warn"] == "restricted", nil
	}); err != nil {
		t.Fatalf("namespace %s's label not in the cache: %v", warned, err)
	}
	if _, err := client.CoreV1().Pods(warned).Create(ctx, plainPod("loose", nil, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("warn only: %v", err)
	}
	w.mu.Lock()
	got = strings.Join(w.list, "\n")
	w.mu.Unlock()
	if !strings.Contains(got, `would violate PodSecurity "restricted:v1.30": allowPrivilegeEscalation != false`) {
		t.Errorf("warnings %q, want upstream's restricted warning", got)
	}
}

// TestPriorityAdmissionThroughTheAPI: class names resolve to priorities
// (the built-in system classes too), unknown classes are refused with
// upstream's message, and a second global default is refused.
func TestPriorityAdmissionThroughTheAPI(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	pod := plainPod("critical", nil, nil)
	pod.Spec.PriorityClassName = "system-cluster-critical"
	got, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 2000000000 || got.Spec.PreemptionPolicy == nil || *got.Spec.PreemptionPolicy != v1.PreemptLowerPriority {
		t.Errorf("priority %v policy %v, want 2000000000 PreemptLowerPriority", got.Spec.Priority, got.Spec.PreemptionPolicy)
	}
	got, err = client.CoreV1().Pods(ns).Create(ctx, plainPod("plain", nil, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 0 {
		t.Errorf("priority %v without a class, want 0", got.Spec.Priority)
	}
	pod = plainPod("unknown", nil, nil)
	pod.Spec.PriorityClassName = "nope"
	_, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	want := `pods "unknown" is forbidden: no PriorityClass with name nope was found`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}

	name := ns + "-default"
	if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 7, GlobalDefault: true}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// The plugin reads PriorityClasses from the watch cache, as upstream's
	// from its informer: the new default is seen a moment after its
	// create. Until then a second default would be admitted, so the probe
	// is a dry run.
	want = fmt.Sprintf(`priorityclasses.scheduling.k8s.io "%s-2" is forbidden: PriorityClass %s is already marked as default. Only one default can exist`, name, name)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err = client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name + "-2"}, Value: 8, GlobalDefault: true}, metav1.CreateOptions{DryRun: dryRunAll})
		if err != nil || time.Now().After(deadline) {
			break
		}
	}
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}
	got, err = client.CoreV1().Pods(ns).Create(ctx, plainPod("defaulted", nil, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.PriorityClassName != name || *got.Spec.Priority != 7 {
		t.Errorf("class %q priority %d, want the global default's", got.Spec.PriorityClassName, *got.Spec.Priority)
	}
}

// TestRuntimeClassAdmissionThroughTheAPI: overhead and scheduling come
// from the RuntimeClass; an unknown one is refused as upstream.
func TestRuntimeClassAdmissionThroughTheAPI(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	name := ns + "-sandbox"
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: "runc",
		Overhead:   &nodev1.Overhead{PodFixed: rl("cpu", "250m", "memory", "120Mi")},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"}, Tolerations: []v1.Toleration{{Key: "sandbox", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}}}
	if _, err := client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	pod := plainPod("sandboxed", nil, nil)
	pod.Spec.RuntimeClassName = &name
	got, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cpu := got.Spec.Overhead[v1.ResourceCPU]; cpu.String() != "250m" || got.Spec.NodeSelector["sandbox"] != "yes" {
		t.Errorf("overhead %v selector %v, want the RuntimeClass's", got.Spec.Overhead, got.Spec.NodeSelector)
	}
	found := false
	for _, tol := range got.Spec.Tolerations {
		found = found || tol.Key == "sandbox"
	}
	if !found {
		t.Errorf("tolerations %v lack the RuntimeClass's", got.Spec.Tolerations)
	}
	missing := "missing"
	pod = plainPod("unknown", nil, nil)
	pod.Spec.RuntimeClassName = &missing
	_, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	want := `pods "unknown" is forbidden: pod rejected: RuntimeClass "missing" not found`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}
}
