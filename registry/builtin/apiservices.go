package builtin

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorapply "k8s.io/kube-aggregator/pkg/client/applyconfiguration"

	apiregistrationvalidation "github.com/kite-project/kite/apis/apiregistration/validation"
	"github.com/kite-project/kite/registry"
)

// APIServices returns the strategy of apiregistration.k8s.io/v1
// apiservices. A local APIService (no spec.service), as those Kite makes
// for its own group versions, is Available from its creation, which
// upstream's local availability controller says of it at once; one with a
// service starts without conditions, and the aggregation layer
// (apiserver/aggregator) checks its server and writes them.
func APIServices() *registry.Strategy {
	s := declared[*apiregistrationv1.APIService]{
		kind: apiregistrationv1.SchemeGroupVersion.WithKind("APIService"), resource: "apiservices", categories: []string{"api-extensions"},
		newList:  func() runtime.Object { return &apiregistrationv1.APIServiceList{} },
		name:     apiregistrationvalidation.AnyAPIServiceName,
		validate: apiregistrationvalidation.ValidateAPIService, update: apiregistrationvalidation.ValidateAPIServiceUpdate,
		status: apiregistrationvalidation.ValidateAPIServiceStatusUpdate,
	}.strategy()
	clear := s.PrepareForCreate
	s.PrepareForCreate = func(obj runtime.Object) {
		clear(obj)
		if svc := obj.(*apiregistrationv1.APIService); svc.Spec.Service == nil {
			svc.Status.Conditions = []apiregistrationv1.APIServiceCondition{{
				Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue,
				Reason: "Local", Message: "Local APIServices are always available",
			}}
		}
	}
	// client-go's compiled-in apply schema lacks the aggregator's kinds;
	// kube-aggregator publishes theirs.
	s.ApplySchema = func() (managedfields.TypeConverter, error) {
		scheme := runtime.NewScheme()
		if err := apiregistrationv1.AddToScheme(scheme); err != nil {
			return nil, err
		}
		return aggregatorapply.NewTypeConverter(scheme), nil
	}
	return s
}

// apiServicePriorities are upstream's group and version priorities of the
// group versions Kite serves (kube-apiserver's apiVersionPriorities).
var apiServicePriorities = map[schema.GroupVersion][2]int32{
	{Version: "v1"}: {18000, 1},
	{Group: "apiregistration.k8s.io", Version: "v1"}:       {18000, 15},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:              {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
	{Group: "storagemigration.k8s.io", Version: "v1"}:      {15800, 15},
}

// localAPIServices are the APIServices kube-apiserver registers for the
// group versions it serves itself: "<version>.<group>", no service.
func localAPIServices(gvs []schema.GroupVersion) []*apiregistrationv1.APIService {
	var out []*apiregistrationv1.APIService
	for _, gv := range gvs {
		p, ok := apiServicePriorities[gv]
		if !ok {
			continue // as upstream, a group version without priority gets none
		}
		s := &apiregistrationv1.APIService{Spec: apiregistrationv1.APIServiceSpec{
			Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: p[0], VersionPriority: p[1]}}
		s.Name = gv.Version + "." + gv.Group
		out = append(out, s)
	}
	return out
}
