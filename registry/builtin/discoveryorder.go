package builtin

import "k8s.io/apimachinery/pkg/runtime/schema"

// APIServicePriority returns upstream's group priority minimum and
// version priority of a group version Kite serves (kube-apiserver's
// apiVersionPriorities, which its local APIServices carry and its
// discovery documents are ordered by); ok is false for any other group
// version (custom resources, extension API servers).
func APIServicePriority(gv schema.GroupVersion) (group, version int32, ok bool) {
	p, ok := apiServicePriorities[gv]
	return p[0], p[1], ok
}
