package api_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const statefulSetManifest = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers:
      - name: agent
        image: busybox
`

// TestKubectlStatefulSetAndDaemonSetAPI: what kubectl sees of a
// StatefulSet and a DaemonSet before any controller acts on them:
// upstream's defaults, columns, scale, the immutable fields, the status
// subresource, the template generation annotation.
func TestKubectlStatefulSetAndDaemonSetAPI(t *testing.T) {
	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(config(t))
	const ns = "sts-api"
	createNamespace(t, client, ns)
	path := t.TempDir() + "/w.yaml"
	if err := os.WriteFile(path, []byte(statefulSetManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out := kubectl(t, "-n", ns, "apply", "-f", path)
	if !strings.Contains(out, "statefulset.apps/web created") || !strings.Contains(out, "daemonset.apps/agent created") {
		t.Fatalf("apply: %s", out)
	}

	var s appsv1.StatefulSet
	if err := json.Unmarshal([]byte(kubectl(t, "-n", ns, "get", "sts", "web", "-o", "json")), &s); err != nil {
		t.Fatal(err)
	}
	ru := s.Spec.UpdateStrategy.RollingUpdate
	switch {
	case s.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || ru == nil || *ru.Partition != 0 || ru.MaxUnavailable.String() != "1":
		t.Errorf("policy %q strategy %+v", s.Spec.PodManagementPolicy, s.Spec.UpdateStrategy)
	case s.Spec.PersistentVolumeClaimRetentionPolicy == nil || s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType:
		t.Errorf("retention %+v", s.Spec.PersistentVolumeClaimRetentionPolicy)
	case *s.Spec.RevisionHistoryLimit != 10 || s.Generation != 1:
		t.Errorf("revisionHistoryLimit %d generation %d", *s.Spec.RevisionHistoryLimit, s.Generation)
	case *s.Spec.VolumeClaimTemplates[0].Spec.VolumeMode != corev1.PersistentVolumeFilesystem:
		t.Errorf("claim template not defaulted: %+v", s.Spec.VolumeClaimTemplates[0].Spec)
	}
	out = kubectl(t, "-n", ns, "get", "statefulsets")
	if !regexp.MustCompile(`(?m)^NAME\s+READY\s+AGE\nweb\s+0/3\s+\S+$`).MatchString(out) {
		t.Errorf("kubectl get statefulsets:\n%s", out)
	}
	out = kubectl(t, "-n", ns, "get", "sts", "-o", "wide")
	if !regexp.MustCompile(`(?m)^NAME\s+READY\s+AGE\s+CONTAINERS\s+IMAGES\nweb\s+0/3\s+\S+\s+nginx\s+nginx:1.25$`).MatchString(out) {
		t.Errorf("kubectl get sts -o wide:\n%s", out)
	}
	if out := kubectl(t, "-n", ns, "scale", "sts", "web", "--replicas=5"); !strings.Contains(out, "statefulset.apps/web scaled") {
		t.Errorf("kubectl scale: %s", out)
	}
	sc, err := client.AppsV1().StatefulSets(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Replicas != 5 || sc.Status.Selector != "app=web" {
		t.Errorf("scale = %+v", sc)
	}

	// Upstream's immutable fields, with its messages.
	got, err := client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 2 {
		t.Errorf("generation after scale = %d, want 2", got.Generation)
	}
	bad := got.DeepCopy()
	bad.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	bad.Spec.ServiceName = "other"
	_, err = client.AppsV1().StatefulSets(ns).Update(ctx, bad, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.volumeClaimTemplates: Invalid value") ||
		!strings.Contains(err.Error(), `spec.serviceName: Invalid value: "other": field is immutable`) {
		t.Errorf("update of immutable fields: %v", err)
	}
	// Status goes through its subresource only, and is checked.
	st := got.DeepCopy()
	st.Status = appsv1.StatefulSetStatus{Replicas: 1, ReadyReplicas: 2}
	_, err = client.AppsV1().StatefulSets(ns).UpdateStatus(ctx, st, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas") {
		t.Errorf("invalid status update: %v", err)
	}
	st.Status = appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 1, ObservedGeneration: 2}
	if _, err := client.AppsV1().StatefulSets(ns).UpdateStatus(ctx, st, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out = kubectl(t, "-n", ns, "get", "sts", "web")
	if !regexp.MustCompile(`web\s+1/5\s`).MatchString(out) {
		t.Errorf("kubectl get sts after a status update:\n%s", out)
	}

	// DaemonSet: defaults, columns, the template generation annotation.
	ds, err := client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "1" || ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.String() != "1" {
		t.Errorf("daemonset annotations %v strategy %+v", ds.Annotations, ds.Spec.UpdateStrategy)
	}
	out = kubectl(t, "-n", ns, "get", "ds", "-o", "wide")
	if !regexp.MustCompile(`(?m)^NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR\nagent\s+0\s+0\s+0\s+0\s+0\s+kubernetes.io/os=linux\s+\S+\s+agent\s+busybox\s+app=agent$`).MatchString(out) {
		t.Errorf("kubectl get ds -o wide:\n%s", out)
	}
	kubectl(t, "-n", ns, "set", "image", "ds/agent", "agent=busybox:1.36")
	kubectl(t, "-n", ns, "annotate", "ds/agent", "note=x")
	ds, err = client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "2" || ds.Generation != 2 {
		t.Errorf("after a template change and an annotation: generation %d annotations %v, want 2 and template generation 2", ds.Generation, ds.Annotations)
	}
}

const storageManifest = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local-path-api
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-api
spec:
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local-path-api
  hostPath: {path: /srv/pv-api}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: claim
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local-path-api
  resources:
    requests: {storage: 1Gi}
`

// TestKubectlPersistentVolumesAPI: StorageClasses, PersistentVolumes and
// PersistentVolumeClaims as kubectl sees them without a binder: defaults,
// columns, the claim's immutable spec and its status subresource.
func TestKubectlPersistentVolumesAPI(t *testing.T) {
	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(config(t))
	const ns = "pv-api"
	createNamespace(t, client, ns)
	t.Cleanup(func() {
		_ = client.CoreV1().PersistentVolumes().Delete(context.Background(), "pv-api", metav1.DeleteOptions{})
		_ = client.StorageV1().StorageClasses().Delete(context.Background(), "local-path-api", metav1.DeleteOptions{})
	})
	path := t.TempDir() + "/s.yaml"
	if err := os.WriteFile(path, []byte(storageManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out := kubectl(t, "-n", ns, "apply", "-f", path)
	for _, w := range []string{"storageclass.storage.k8s.io/local-path-api created", "persistentvolume/pv-api created", "persistentvolumeclaim/claim created"} {
		if !strings.Contains(out, w) {
			t.Errorf("apply: %s", out)
		}
	}
	// A list marks the effective default class; a get of one object does
	// not (upstream's printStorageClass).
	out = kubectl(t, "get", "sc")
	if !regexp.MustCompile(`(?m)^NAME\s+PROVISIONER\s+RECLAIMPOLICY\s+VOLUMEBINDINGMODE\s+ALLOWVOLUMEEXPANSION\s+AGE\n(.*\n)*local-path-api \(default\)\s+rancher.io/local-path\s+Delete\s+WaitForFirstConsumer\s+false\s+\S+$`).MatchString(out) {
		t.Errorf("kubectl get sc:\n%s", out)
	}
	out = kubectl(t, "get", "pv", "pv-api", "-o", "wide")
	if !regexp.MustCompile(`(?m)^NAME\s+CAPACITY\s+ACCESS MODES\s+RECLAIM POLICY\s+STATUS\s+CLAIM\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+REASON\s+AGE\s+VOLUMEMODE\npv-api\s+2Gi\s+RWO\s+Retain\s+Pending\s+local-path-api\s+<unset>\s+\S+\s+Filesystem$`).MatchString(out) {
		t.Errorf("kubectl get pv -o wide:\n%s", out)
	}
	out = kubectl(t, "-n", ns, "get", "pvc")
	if !regexp.MustCompile(`(?m)^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+AGE\nclaim\s+Pending\s+local-path-api\s+<unset>\s+\S+$`).MatchString(out) {
		t.Errorf("kubectl get pvc:\n%s", out)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, "pv-api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Status.LastPhaseTransitionTime == nil || *pv.Spec.HostPath.Type != corev1.HostPathUnset {
		t.Errorf("pv status %+v hostPath %+v", pv.Status, pv.Spec.HostPath)
	}

	// What the binder will write: volumeName once, then the status.
	pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "claim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Spec.VolumeName = "pv-api"
	if pvc, err = client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}
	if pvc, err = client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out = kubectl(t, "-n", ns, "get", "pvc", "claim")
	if !regexp.MustCompile(`claim\s+Bound\s+pv-api\s+2Gi\s+RWO\s+local-path-api\s+<unset>\s`).MatchString(out) {
		t.Errorf("kubectl get pvc after binding:\n%s", out)
	}
	pvc.Spec.VolumeName = "elsewhere"
	_, err = client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims") {
		t.Errorf("rebinding a claim: %v", err)
	}
}

// TestWorkloadStorageDiscovery: the five resources are listed as
// kube-apiserver 1.37.2 lists them (kubectl api-resources -o wide).
func TestWorkloadStorageDiscovery(t *testing.T) {
	ref, err := os.ReadFile("/work/shared/reference/discovery-1.37.2/api-resources-wide.txt")
	if err != nil {
		t.Skipf("no reference: %v", err)
	}
	out := kubectl(t, "api-resources", "-o", "wide")
	fieldsOf := func(text, name string) []string {
		for _, line := range strings.Split(text, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == name {
				return f
			}
		}
		return nil
	}
	for _, name := range []string{"statefulsets", "daemonsets", "persistentvolumes", "persistentvolumeclaims", "storageclasses"} {
		want, got := fieldsOf(string(ref), name), fieldsOf(out, name)
		if want == nil || strings.Join(want, " ") != strings.Join(got, " ") {
			t.Errorf("%s:\n got  %v\n want %v", name, got, want)
		}
	}
}
