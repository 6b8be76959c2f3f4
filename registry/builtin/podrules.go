package builtin

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/apis/core/defaults"
)

// defaultPod applies upstream's v1 pod defaults. The "default" service
// account is the ServiceAccount admission plugin's (it leaves mirror pods
// without one).
func defaultPod(pod *v1.Pod) {
	defaults.Pod(pod)
}
