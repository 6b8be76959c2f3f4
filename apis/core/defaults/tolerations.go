package defaults

import corev1 "k8s.io/api/core/v1"

// DefaultTolerationSeconds is kube-apiserver's default for both
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds.
const DefaultTolerationSeconds int64 = 300

// TolerationSeconds is upstream's DefaultTolerationSeconds admission
// (plugin/pkg/admission/defaulttolerationseconds): a pod that does not
// already tolerate node.kubernetes.io/not-ready or
// node.kubernetes.io/unreachable with effect NoExecute gets a toleration of
// it for seconds, so that its node's failure evicts it after that long
// rather than at once.
func TolerationSeconds(pod *corev1.Pod, seconds int64) {
	var notReady, unreachable bool
	for _, t := range pod.Spec.Tolerations {
		if (t.Key == corev1.TaintNodeNotReady || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
			notReady = true
		}
		if (t.Key == corev1.TaintNodeUnreachable || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
			unreachable = true
		}
	}
	if !notReady {
		s := seconds
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s,
		})
	}
	if !unreachable {
		s := seconds
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s,
		})
	}
}
