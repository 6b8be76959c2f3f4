package staticpod

import (
	"errors"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/kubetypes"
)

var fileOrigin = Origin{Source: kubetypes.FileSource, Location: "/etc/kite/manifests/web.yaml", NodeName: "node1"}

const podYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: nginx
    image: nginx:1.27
`

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"web"},"name":"web"},
 "spec":{"containers":[{"image":"nginx:1.27","name":"nginx"}]}}`

func TestDecodePodDefaultsAsUpstream(t *testing.T) {
	pod, err := DecodePod([]byte(podYAML), fileOrigin)
	if err != nil {
		t.Fatalf("DecodePod: %v", err)
	}
	if pod.Name != "web-node1" {
		t.Errorf("name = %q, want web-node1 (suffix lowercased)", pod.Name)
	}
	if pod.Namespace != "default" {
		t.Errorf("namespace = %q, want default", pod.Namespace)
	}
	if pod.Spec.NodeName != "node1" {
		t.Errorf("spec.nodeName = %q, want node1", pod.Spec.NodeName)
	}
	if pod.UID == "" || pod.Annotations[kubetypes.ConfigHashAnnotationKey] != string(pod.UID) {
		t.Errorf("uid %q, config.hash %q: want equal and non-empty", pod.UID, pod.Annotations[kubetypes.ConfigHashAnnotationKey])
	}
	if pod.Status.Phase != v1.PodPending {
		t.Errorf("phase = %q, want Pending", pod.Status.Phase)
	}
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0] != want {
		t.Errorf("tolerations = %+v, want only %+v", pod.Spec.Tolerations, want)
	}
}

func TestDecodePodHTTPHasNoToleration(t *testing.T) {
	pod, err := DecodePod([]byte(podYAML), Origin{Source: kubetypes.HTTPSource, Location: "http://x/", NodeName: "n"})
	if err != nil {
		t.Fatalf("DecodePod: %v", err)
	}
	if len(pod.Spec.Tolerations) != 0 {
		t.Errorf("http pod got tolerations %+v, want none", pod.Spec.Tolerations)
	}
}

func TestDecodePodKeepsNamespaceAndUID(t *testing.T) {
	data := strings.Replace(podYAML, "name: web\n", "name: web\n  namespace: kube-system\n  uid: my-uid\n", 1)
	pod, err := DecodePod([]byte(data), fileOrigin)
	if err != nil {
		t.Fatalf("DecodePod: %v", err)
	}
	if pod.Namespace != "kube-system" || pod.UID != "my-uid" || pod.Annotations[kubetypes.ConfigHashAnnotationKey] != "my-uid" {
		t.Errorf("got ns %q uid %q hash %q, want kube-system, my-uid, my-uid", pod.Namespace, pod.UID, pod.Annotations[kubetypes.ConfigHashAnnotationKey])
	}
}

func TestUIDHash(t *testing.T) {
	uid := func(t *testing.T, data string, o Origin) string {
		t.Helper()
		pod, err := DecodePod([]byte(data), o)
		if err != nil {
			t.Fatalf("DecodePod: %v", err)
		}
		return string(pod.UID)
	}
	base := uid(t, podYAML, fileOrigin)
	tests := []struct {
		name     string
		data     string
		origin   Origin
		wantSame bool
	}{
		{"same content again", podYAML, fileOrigin, true},
		{"same pod in JSON", podJSON, fileOrigin, true},
		{"same pod reformatted", strings.ReplaceAll(podYAML, "labels: {app: web}", "labels:\n    app: web"), fileOrigin, true},
		{"content changed", strings.Replace(podYAML, "nginx:1.27", "nginx:1.28", 1), fileOrigin, false},
		{"other file", podYAML, Origin{Source: fileOrigin.Source, Location: "/etc/kite/manifests/other.yaml", NodeName: fileOrigin.NodeName}, false},
		{"other node", podYAML, Origin{Source: fileOrigin.Source, Location: fileOrigin.Location, NodeName: "node2"}, false},
		{"other source", podYAML, Origin{Source: kubetypes.HTTPSource, Location: fileOrigin.Location, NodeName: fileOrigin.NodeName}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := uid(t, tc.data, tc.origin); (got == base) != tc.wantSame {
				t.Errorf("uid %s vs base %s: same=%v, want same=%v", got, base, got == base, tc.wantSame)
			}
		})
	}
}

func TestDecodePodsSingleAndList(t *testing.T) {
	list := `{"apiVersion":"v1","kind":"PodList","items":[
	  {"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}},
	  {"metadata":{"name":"b","namespace":"ns"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}`
	o := Origin{Source: kubetypes.HTTPSource, Location: "http://127.0.0.1/pods", NodeName: "n1"}
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"single pod", podYAML, []string{"default/web-n1"}},
		{"pod list", list, []string{"default/a-n1", "ns/b-n1"}},
		{"empty pod list", `{"apiVersion":"v1","kind":"PodList","items":[]}`, nil},
		{"one YAML document with markers and comments", "# web\n---\n" + podYAML + "---\n# end\n", []string{"default/web-n1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods, err := DecodePods([]byte(tc.data), o)
			if err != nil {
				t.Fatalf("DecodePods: %v", err)
			}
			var got []string
			for _, p := range pods {
				got = append(got, p.Namespace+"/"+p.Name)
				if p.UID == "" {
					t.Errorf("pod %s has no UID", p.Name)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("pods = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDecodeRejects mirrors upstream's TestExtractInvalidPods and
// TestExtractFromBadDataFile, plus the static-pod API reference rule.
func TestDecodeRejects(t *testing.T) {
	pod := func(spec string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":` + spec + `}`
	}
	tests := []struct {
		name string
		data string
		want error
	}{
		{"empty", "", ErrDecode},
		{"not yaml", "{{{", ErrDecode},
		{"no apiVersion", `{"kind":"Pod","metadata":{"name":"p"}}`, ErrDecode},
		{"invalid apiVersion", `{"apiVersion":"v9","kind":"Pod","metadata":{"name":"p"}}`, ErrDecode},
		{"not a pod", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"p"}}`, ErrDecode},
		{"no name", `{"apiVersion":"v1","kind":"Pod","metadata":{},"spec":{"containers":[{"name":"c","image":"i"}]}}`, ErrInvalid},
		{"no containers", pod(`{}`), ErrInvalid},
		{"empty container name", pod(`{"containers":[{"name":"","image":"i"}]}`), ErrInvalid},
		{"invalid container name", pod(`{"containers":[{"name":"_c","image":"i"}]}`), ErrInvalid},
		{"duplicate container name", pod(`{"containers":[{"name":"c","image":"i"},{"name":"c","image":"i"}]}`), ErrInvalid},
		{"no image", pod(`{"containers":[{"name":"c"}]}`), ErrInvalid},
		{"invalid volume name", pod(`{"containers":[{"name":"c","image":"i"}],"volumes":[{"name":"_v","emptyDir":{}}]}`), ErrInvalid},
		{"duplicate volume name", pod(`{"containers":[{"name":"c","image":"i"}],"volumes":[{"name":"v","emptyDir":{}},{"name":"v","emptyDir":{}}]}`), ErrInvalid},
		{"secret volume", pod(`{"containers":[{"name":"c","image":"i"}],"volumes":[{"name":"v","secret":{"secretName":"s"}}]}`), ErrInvalid},
		{"configmap env", pod(`{"containers":[{"name":"c","image":"i","env":[{"name":"E","valueFrom":{"configMapKeyRef":{"name":"m","key":"k"}}}]}]}`), ErrInvalid},
		{"bad restart policy", pod(`{"restartPolicy":"Sometimes","containers":[{"name":"c","image":"i"}]}`), ErrInvalid},
		{"too large", strings.Repeat(" ", MaxManifestBytes+1), ErrDecode},
		{"two YAML documents", podYAML + "---\n" + podYAML, ErrDecode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePod([]byte(tc.data), fileOrigin)
			if !errors.Is(err, tc.want) {
				t.Fatalf("DecodePod error = %v, want %v", err, tc.want)
			}
			if _, err := DecodePods([]byte(tc.data), fileOrigin); !errors.Is(err, tc.want) {
				t.Fatalf("DecodePods error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecodePodsOneBadItemRejectsList(t *testing.T) {
	list := `{"apiVersion":"v1","kind":"PodList","items":[
	  {"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}},
	  {"metadata":{"name":"b"},"spec":{"containers":[]}}]}`
	if _, err := DecodePods([]byte(list), fileOrigin); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "item 1") {
		t.Fatalf("error = %v, want ErrInvalid naming item 1", err)
	}
}

func TestGeneratePodName(t *testing.T) {
	if got := GeneratePodName("static-pod1", "Node1"); got != "static-pod1-node1" {
		t.Errorf("GeneratePodName = %q, want static-pod1-node1", got)
	}
}

func TestDecodePodAppliesAPIDefaultsAfterHashing(t *testing.T) {
	pod, err := DecodePod([]byte(podYAML), fileOrigin)
	if err != nil {
		t.Fatalf("DecodePod: %v", err)
	}
	if pod.Spec.RestartPolicy != v1.RestartPolicyAlways || pod.Spec.DNSPolicy != v1.DNSClusterFirst ||
		pod.Spec.Containers[0].ImagePullPolicy != v1.PullIfNotPresent {
		t.Errorf("API defaults missing: restartPolicy %q dnsPolicy %q imagePullPolicy %q",
			pod.Spec.RestartPolicy, pod.Spec.DNSPolicy, pod.Spec.Containers[0].ImagePullPolicy)
	}
	// The UID is the hash of the pod as written, so that defaults added by
	// a newer agent do not change it (and restart the pod).
	obj, err := decodeObject([]byte(podYAML))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Hash(obj.(*v1.Pod), fileOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if pod.UID != want {
		t.Errorf("uid %s, want the hash of the undefaulted pod %s", pod.UID, want)
	}
}

func TestDecodePodRejectsAPIReferences(t *testing.T) {
	tests := []struct{ name, spec string }{
		{"service account", `{"serviceAccountName":"sa","containers":[{"name":"c","image":"i"}]}`},
		{"envFrom secret", `{"containers":[{"name":"c","image":"i","envFrom":[{"secretRef":{"name":"s"}}]}]}`},
		{"pvc", `{"containers":[{"name":"c","image":"i"}],"volumes":[{"name":"v","persistentVolumeClaim":{"claimName":"c"}}]}`},
		{"projected configmap", `{"containers":[{"name":"c","image":"i"}],"volumes":[{"name":"v","projected":{"sources":[{"configMap":{"name":"m"}}]}}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":` + tc.spec + `}`
			_, err := DecodePod([]byte(data), fileOrigin)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "static pods may not reference") {
				t.Fatalf("error = %v, want ErrInvalid saying static pods may not reference", err)
			}
		})
	}
}

func TestValidateNodeName(t *testing.T) {
	for name, ok := range map[string]bool{"node1": true, "n.example.com": true, "Node1": false, "": false, "node_1": false} {
		if err := ValidateNodeName(name); (err == nil) != ok {
			t.Errorf("ValidateNodeName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// TestDecodeKubeadmManifest: a real control-plane manifest passes.
func TestDecodeKubeadmManifest(t *testing.T) {
	data, err := os.ReadFile("testdata/etcd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pod, err := DecodePod(data, Origin{Source: kubetypes.FileSource, Location: "/etc/kubernetes/manifests/etcd.yaml", NodeName: "cp-1"})
	if err != nil {
		t.Fatalf("DecodePod: %v", err)
	}
	if pod.Namespace != "kube-system" || pod.Name != "etcd-cp-1" || !pod.Spec.HostNetwork {
		t.Errorf("pod %s/%s hostNetwork %v", pod.Namespace, pod.Name, pod.Spec.HostNetwork)
	}
	// The API defaults are applied.
	if pod.Spec.Containers[0].TerminationMessagePath != v1.TerminationMessagePathDefault {
		t.Errorf("terminationMessagePath %q, want the API default", pod.Spec.Containers[0].TerminationMessagePath)
	}
}
