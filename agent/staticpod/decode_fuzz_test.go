package staticpod

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/kite-project/kite/agent/kubetypes"
)

// FuzzDecodePods feeds manifests (file or URL bodies) to the decoder. A
// refused manifest is an ErrDecode or ErrInvalid error; an accepted one
// decodes the same way twice, agrees with DecodePod when it is one pod,
// and round-trips: each pod, written back as a JSON or YAML manifest under
// its name as written, decodes to itself (defaulting is idempotent and
// the UID, once set, is kept).
func FuzzDecodePods(f *testing.F) {
	f.Add([]byte(podYAML))
	f.Add([]byte(podJSON))
	origins := []Origin{
		fileOrigin,
		{Source: kubetypes.HTTPSource, Location: "http://10.0.0.1/pods", NodeName: "Node-A"},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, o := range origins {
			pods, err := DecodePods(data, o)
			if err != nil {
				if !errors.Is(err, ErrDecode) && !errors.Is(err, ErrInvalid) {
					t.Fatalf("DecodePods error wraps neither ErrDecode nor ErrInvalid: %v", err)
				}
				continue
			}
			again, err := DecodePods(data, o)
			if err != nil || !apiequality.Semantic.DeepEqual(pods, again) {
				t.Fatalf("decoding twice differs: %v", err)
			}
			if one, err := DecodePod(data, o); err == nil {
				if len(pods) != 1 || !apiequality.Semantic.DeepEqual(one, pods[0]) {
					t.Fatalf("DecodePod and DecodePods differ on one pod")
				}
			}
			for _, pod := range pods {
				checkRoundTrip(t, pod, o)
			}
		}
	})
}

// checkRoundTrip writes pod back as a manifest, with the name it had before
// the node suffix, and decodes it again.
func checkRoundTrip(t *testing.T, pod *v1.Pod, o Origin) {
	t.Helper()
	suffix := "-" + strings.ToLower(o.NodeName)
	if !strings.HasSuffix(pod.Name, suffix) {
		t.Fatalf("pod name %q lacks the node suffix %q", pod.Name, suffix)
	}
	if pod.APIVersion != "v1" || pod.Kind != "Pod" {
		t.Fatalf("decoded pod says apiVersion %q kind %q, want v1 Pod", pod.APIVersion, pod.Kind)
	}
	written := pod.DeepCopy()
	written.Name = strings.TrimSuffix(pod.Name, suffix)
	js, err := json.Marshal(written)
	if err != nil {
		t.Fatalf("encode decoded pod: %v", err)
	}
	ys, err := yaml.Marshal(written)
	if err != nil {
		t.Fatalf("encode decoded pod as YAML: %v", err)
	}
	for form, manifest := range map[string][]byte{"JSON": js, "YAML": ys} {
		back, err := DecodePod(manifest, o)
		if err != nil {
			t.Fatalf("decoded pod written back as %s does not decode: %v\n%s", form, err, manifest)
		}
		if !apiequality.Semantic.DeepEqual(back, pod) {
			t.Fatalf("decoded pod written back as %s decodes differently:\n%s\ndiff: %s", form, manifest, cmp.Diff(pod, back))
		}
	}
}
