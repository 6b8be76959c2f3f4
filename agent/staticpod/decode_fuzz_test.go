package staticpod

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yamlv2 "go.yaml.in/yaml/v2"
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

// yamlManifest writes a JSON manifest as YAML. sigs.k8s.io/yaml converts
// by parsing the JSON as YAML, which refuses the raw C1 and DEL characters
// that JSON leaves unescaped but a YAML double-quoted scalar ("\x7f") can
// carry; those manifests are written with the YAML encoder directly, which
// escapes them.
func yamlManifest(js []byte) ([]byte, error) {
	ys, err := yaml.JSONToYAML(js)
	if err == nil || !strings.Contains(err.Error(), "control characters") {
		return ys, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return yamlv2.Marshal(yamlNumbers(doc))
}

// yamlNumbers turns json.Numbers into int64 where they are integers, so
// that large integers are written exactly rather than through float64.
func yamlNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = yamlNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = yamlNumbers(e)
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	}
	return v
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
	ys, err := yamlManifest(js)
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
