package builtin

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/apis/core/defaults"
)

// defaultPod applies upstream's v1 pod defaults and what the
// ServiceAccount admission plugin fills in: the "default" service account.
func defaultPod(pod *v1.Pod) {
	defaults.Pod(pod)
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
		pod.Spec.DeprecatedServiceAccount = "default"
	}
}
