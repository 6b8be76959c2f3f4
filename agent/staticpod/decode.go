package staticpod

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kite-project/kite/apis/core/defaults"
)

// MaxManifestBytes is the largest manifest (file or URL body) accepted, as
// upstream's maxConfigLength.
const MaxManifestBytes = 10 << 20

var (
	// ErrDecode marks bytes that are not a pod (or pod list) we can decode.
	ErrDecode = errors.New("staticpod: cannot decode manifest")
	// ErrInvalid marks a decoded pod that fails validation.
	ErrInvalid = errors.New("staticpod: invalid pod")
)

// deserializer decodes core/v1 objects from JSON. It is immutable once
// built, so one per process is shared by every source; it is built on
// first use, not at package initialisation, which every process of the
// binary (each container's supervisor too) would pay for.
var deserializer = sync.OnceValue(func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		panic(fmt.Sprintf("staticpod: registering core/v1: %v", err))
	}
	return serializer.NewCodecFactory(scheme).UniversalDeserializer()
})

// decodeObject converts YAML (or JSON) to JSON and decodes it as a core/v1
// object. apiVersion and kind are required.
func decodeObject(data []byte) (runtime.Object, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty manifest", ErrDecode)
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("%w: manifest is %d bytes, more than the limit of %d", ErrDecode, len(data), MaxManifestBytes)
	}
	if n := yamlDocuments(data); n > 1 {
		// Converting YAML to JSON keeps only the first document: refuse
		// rather than drop the others silently.
		return nil, fmt.Errorf("%w: manifest holds %d YAML documents, want one (one pod per manifest; a URL may serve a PodList)", ErrDecode, n)
	}
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	obj, _, err := deserializer().Decode(js, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return obj, nil
}

// yamlDocuments counts the YAML documents of data that hold more than
// comments and blank lines. JSON is one document.
func yamlDocuments(data []byte) int {
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		return 1
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	n := 0
	for {
		doc, err := r.Read()
		if err != nil {
			return n // io.EOF, or an error ToJSON will report
		}
		if hasContent(doc) {
			n++
		}
	}
}

// hasContent says whether a YAML document has a line that is neither blank,
// a comment, nor a document marker.
func hasContent(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) && !bytes.Equal(line, []byte("...")) {
			return true
		}
	}
	return false
}

// DecodePod decodes one pod from a manifest, defaults it for origin o and
// validates it. Errors wrap ErrDecode or ErrInvalid.
func DecodePod(data []byte, o Origin) (*v1.Pod, error) {
	obj, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("%w: want kind Pod, got %T", ErrDecode, obj)
	}
	if err := prepare(pod, o); err != nil {
		return nil, err
	}
	return pod, nil
}

// DecodePods decodes a manifest holding either one Pod or a PodList (what a
// manifest URL may serve), defaulting and validating every pod. One bad item
// rejects the whole list: half a list would stop pods that are still wanted.
func DecodePods(data []byte, o Origin) ([]*v1.Pod, error) {
	obj, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	switch obj := obj.(type) {
	case *v1.Pod:
		if err := prepare(obj, o); err != nil {
			return nil, err
		}
		return []*v1.Pod{obj}, nil
	case *v1.PodList:
		pods := make([]*v1.Pod, 0, len(obj.Items))
		for i := range obj.Items {
			pod := &obj.Items[i]
			if err := prepare(pod, o); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			pods = append(pods, pod)
		}
		return pods, nil
	}
	return nil, fmt.Errorf("%w: want kind Pod or PodList, got %T", ErrDecode, obj)
}

// prepare defaults and validates a decoded pod in place, as upstream:
// API defaults (which upstream's decoder applies), then the static pod
// defaults, then the API server's validation. The UID is hashed first, from
// the pod as written, so that new API defaults do not change it.
func prepare(pod *v1.Pod, o Origin) error {
	if pod.Name == "" {
		return fmt.Errorf("%w: metadata.name is needed for the pod", ErrInvalid)
	}
	if pod.UID == "" {
		uid, err := Hash(pod, o)
		if err != nil {
			return err
		}
		pod.UID = uid
	}
	// The decoder takes apiVersion and kind case-insensitively (its meta
	// factory uses encoding/json) but the object's fields exactly, and list
	// items may say any kind: give every pod the one type it has, after the
	// hash so that UIDs stay what they were.
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	defaults.Pod(pod)
	if err := ApplyDefaults(pod, o); err != nil {
		return err
	}
	if err := validate(pod); err != nil {
		return fmt.Errorf("%w: pod %s/%s: %w", ErrInvalid, pod.Namespace, pod.Name, err)
	}
	return nil
}
