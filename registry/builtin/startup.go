package builtin

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	schedulingvalidation "github.com/kite-project/kite/apis/scheduling/validation"
	"github.com/kite-project/kite/apis/storage/localpath"
	"github.com/kite-project/kite/registry"
)

// StartupObject is an object the API server creates at start when it is
// missing, as upstream's post-start hooks do.
type StartupObject struct {
	// Resource names the strategy's group and resource.
	Resource schema.GroupResource
	Object   runtime.Object
}

// StartupObjects are the objects kube-apiserver keeps from its start:
// the system priority classes (scheduling's post-start hook) and API
// priority and fairness' mandatory and suggested configuration
// (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap), the default
// StorageClass local-path of the built-in local provisioner (as k3s
// ships one; docs/storage.md), and the local
// APIServices of the group versions of All and of served (the strategies
// served beside them, e.g. CustomResourceDefinitions). Each call returns
// new copies.
func StartupObjects(served ...*registry.Strategy) []StartupObject {
	var out []StartupObject
	for _, pc := range schedulingvalidation.SystemPriorityClasses() {
		out = append(out, StartupObject{schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, pc})
	}
	for _, list := range [][]*flowcontrolPL{bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations} {
		for _, pl := range list {
			out = append(out, StartupObject{flowcontrolv1.Resource("prioritylevelconfigurations"), pl.DeepCopy()})
		}
	}
	for _, list := range [][]*flowcontrolFS{bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas} {
		for _, fs := range list {
			out = append(out, StartupObject{flowcontrolv1.Resource("flowschemas"), fs.DeepCopy()})
		}
	}
	out = append(out, StartupObject{storagev1.Resource("storageclasses"), localpath.StorageClass()})
	seen := map[schema.GroupVersion]bool{}
	var gvs []schema.GroupVersion
	for _, s := range append(All(nil), served...) {
		if gv := s.Kind.GroupVersion(); !seen[gv] {
			seen[gv] = true
			gvs = append(gvs, gv)
		}
	}
	for _, s := range localAPIServices(gvs) {
		out = append(out, StartupObject{apiregistrationv1.Resource("apiservices"), s})
	}
	return out
}

type (
	flowcontrolPL = flowcontrolv1.PriorityLevelConfiguration
	flowcontrolFS = flowcontrolv1.FlowSchema
)
