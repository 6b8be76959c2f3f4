package staticpod

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/kite-project/kite/agent/kubetypes"
)

// Origin says where a manifest came from; it is part of its pods' identity.
type Origin struct {
	// Source is kubetypes.FileSource or kubetypes.HTTPSource.
	Source string
	// Location is the manifest's file path or URL.
	Location string
	// NodeName is the node the agent runs as.
	NodeName string
}

// hashScheme versions the UID hash: change it only with a note in the
// release, because a new scheme restarts every static pod once.
const hashScheme = "kite-static-pod-v1"

// Hash returns the UID of a static pod decoded from a manifest: a hash of
// the pod as decoded (before defaulting) and of its origin. It is a
// deterministic function of the content: the JSON encoding of a v1.Pod has a
// fixed field order and sorted map keys.
func Hash(pod *v1.Pod, o Origin) (types.UID, error) {
	content, err := json.Marshal(pod)
	if err != nil {
		return "", fmt.Errorf("staticpod: encode pod %q for hashing: %w", pod.Name, err)
	}
	h := sha256.New()
	// Length-prefixed fields, so that no two different inputs collide by
	// shifting bytes from one field into the next.
	for _, field := range [][]byte{[]byte(hashScheme), []byte(o.Source), []byte(o.Location), []byte(o.NodeName), content} {
		fmt.Fprintf(h, "%d:", len(field))
		h.Write(field)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil)[:16])), nil
}

// GeneratePodName returns the name a static pod runs under on a node:
// "<name>-<lowercased node name>", as upstream.
func GeneratePodName(name, nodeName string) string {
	return name + "-" + strings.ToLower(nodeName)
}

// ApplyDefaults defaults a decoded static pod for its origin, as upstream's
// applyDefaults: UID (unless set), name suffix, namespace, nodeName, config
// hash annotation, file-source toleration and phase Pending.
func ApplyDefaults(pod *v1.Pod, o Origin) error {
	if pod.UID == "" {
		uid, err := Hash(pod, o)
		if err != nil {
			return err
		}
		pod.UID = uid
	}
	pod.Name = GeneratePodName(pod.Name, o.NodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = o.NodeName
	if pod.Annotations == nil {
		pod.Annotations = make(map[string]string)
	}
	pod.Annotations[kubetypes.ConfigHashAnnotationKey] = string(pod.UID)
	if o.Source == kubetypes.FileSource {
		addOrUpdateToleration(pod, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	}
	pod.Status.Phase = v1.PodPending
	return nil
}

// addOrUpdateToleration adds t unless a toleration matching it (same key,
// operator, value and effect) is there already, as upstream's helper.
func addOrUpdateToleration(pod *v1.Pod, t v1.Toleration) {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].MatchToleration(&t) {
			pod.Spec.Tolerations[i] = t
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
}

// ValidateNodeName checks that name can be a node's name, as the API server
// would: static pods carry it in spec.nodeName. Sources call it at start, so
// that a bad --hostname-override fails there and not on every manifest.
func ValidateNodeName(name string) error {
	if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("node name %q: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}
