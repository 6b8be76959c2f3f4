package builtin

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	certificatesvalidation "github.com/kite-project/kite/apis/certificates/validation"
	flowcontroldefaults "github.com/kite-project/kite/apis/flowcontrol/defaults"
	flowcontrolvalidation "github.com/kite-project/kite/apis/flowcontrol/validation"
	resourcedefaults "github.com/kite-project/kite/apis/resource/defaults"
	resourcevalidation "github.com/kite-project/kite/apis/resource/validation"
	storagemigrationvalidation "github.com/kite-project/kite/apis/storagemigration/validation"
	"github.com/kite-project/kite/registry"
)

// certificatesStrategies are certificates.k8s.io/v1's
// certificatesigningrequests (certificates.go), clustertrustbundles and
// podcertificaterequests.
func certificatesStrategies() []*registry.Strategy {
	gv := certificatesv1.SchemeGroupVersion
	return []*registry.Strategy{
		CertificateSigningRequests(),
		declared[*certificatesv1.ClusterTrustBundle]{
			kind: gv.WithKind("ClusterTrustBundle"), resource: "clustertrustbundles",
			newList:  func() runtime.Object { return &certificatesv1.ClusterTrustBundleList{} },
			name:     certificatesvalidation.AnyClusterTrustBundleName,
			validate: certificatesvalidation.ValidateClusterTrustBundle, update: certificatesvalidation.ValidateClusterTrustBundleUpdate,
		}.strategy(),
		declared[*certificatesv1.PodCertificateRequest]{
			kind: gv.WithKind("PodCertificateRequest"), resource: "podcertificaterequests", namespaced: true,
			newList:  func() runtime.Object { return &certificatesv1.PodCertificateRequestList{} },
			validate: certificatesvalidation.ValidatePodCertificateRequest, update: certificatesvalidation.ValidatePodCertificateRequestUpdate,
			status: certificatesvalidation.ValidatePodCertificateRequestStatusUpdate,
			// As upstream's field label conversion: the kubelet watches
			// its node's requests by spec.nodeName.
			fields: func(r *certificatesv1.PodCertificateRequest) fields.Set {
				return fields.Set{"spec.signerName": r.Spec.SignerName, "spec.podName": r.Spec.PodName, "spec.nodeName": string(r.Spec.NodeName)}
			},
			fieldLabels: []string{"spec.signerName", "spec.podName", "spec.nodeName"},
		}.strategy(),
	}
}

// resourceStrategies are resource.k8s.io/v1's kinds (dynamic resource
// allocation): stored with their rules; no driver or allocator runs.
func resourceStrategies() []*registry.Strategy {
	gv := resourcev1.SchemeGroupVersion
	return []*registry.Strategy{
		declared[*resourcev1.DeviceClass]{
			kind: gv.WithKind("DeviceClass"), resource: "deviceclasses",
			newList:  func() runtime.Object { return &resourcev1.DeviceClassList{} },
			validate: resourcevalidation.ValidateDeviceClass, update: resourcevalidation.ValidateDeviceClassUpdate,
			generation: true,
		}.strategy(),
		declared[*resourcev1.DeviceTaintRule]{
			kind: gv.WithKind("DeviceTaintRule"), resource: "devicetaintrules",
			newList:  func() runtime.Object { return &resourcev1.DeviceTaintRuleList{} },
			validate: resourcevalidation.ValidateDeviceTaintRule, update: resourcevalidation.ValidateDeviceTaintRuleUpdate,
			status: noStatusRules[*resourcev1.DeviceTaintRule], generation: true,
		}.strategy(),
		declared[*resourcev1.ResourceClaim]{
			kind: gv.WithKind("ResourceClaim"), resource: "resourceclaims", namespaced: true,
			newList:  func() runtime.Object { return &resourcev1.ResourceClaimList{} },
			defaults: resourcedefaults.ResourceClaim,
			validate: resourcevalidation.ValidateResourceClaim, update: resourcevalidation.ValidateResourceClaimUpdate,
			status: resourcevalidation.ValidateResourceClaimStatusUpdate,
		}.strategy(),
		declared[*resourcev1.ResourceClaimTemplate]{
			kind: gv.WithKind("ResourceClaimTemplate"), resource: "resourceclaimtemplates", namespaced: true,
			newList:  func() runtime.Object { return &resourcev1.ResourceClaimTemplateList{} },
			defaults: resourcedefaults.ResourceClaimTemplate,
			validate: resourcevalidation.ValidateResourceClaimTemplate, update: resourcevalidation.ValidateResourceClaimTemplateUpdate,
		}.strategy(),
		declared[*resourcev1.ResourceSlice]{
			kind: gv.WithKind("ResourceSlice"), resource: "resourceslices",
			newList:  func() runtime.Object { return &resourcev1.ResourceSliceList{} },
			validate: resourcevalidation.ValidateResourceSlice, update: resourcevalidation.ValidateResourceSliceUpdate,
			generation: true,
			// Upstream's selectable fields of resource slices.
			fields: func(s *resourcev1.ResourceSlice) fields.Set {
				node := ""
				if s.Spec.NodeName != nil {
					node = *s.Spec.NodeName
				}
				return fields.Set{resourcev1.ResourceSliceSelectorNodeName: node, resourcev1.ResourceSliceSelectorDriver: s.Spec.Driver}
			},
			fieldLabels: []string{resourcev1.ResourceSliceSelectorNodeName, resourcev1.ResourceSliceSelectorDriver},
		}.strategy(),
	}
}

// flowcontrolStrategies are flowcontrol.apiserver.k8s.io/v1's flowschemas
// and prioritylevelconfigurations: stored, with upstream's mandatory and
// suggested objects created at start (StartupObjects); apiserver/flowcontrol
// classifies and limits requests by them (docs/flowcontrol.md).
func flowcontrolStrategies() []*registry.Strategy {
	gv := flowcontrolv1.SchemeGroupVersion
	return []*registry.Strategy{
		declared[*flowcontrolv1.FlowSchema]{
			kind: gv.WithKind("FlowSchema"), resource: "flowschemas",
			newList:  func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
			defaults: flowcontroldefaults.FlowSchema,
			validate: flowcontrolvalidation.ValidateFlowSchema, update: flowcontrolvalidation.ValidateFlowSchemaUpdate,
			status: noStatusRules[*flowcontrolv1.FlowSchema], generation: true,
		}.strategy(),
		declared[*flowcontrolv1.PriorityLevelConfiguration]{
			kind: gv.WithKind("PriorityLevelConfiguration"), resource: "prioritylevelconfigurations",
			newList:  func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
			defaults: flowcontroldefaults.PriorityLevelConfiguration,
			validate: flowcontrolvalidation.ValidatePriorityLevelConfiguration, update: flowcontrolvalidation.ValidatePriorityLevelConfigurationUpdate,
			status: noStatusRules[*flowcontrolv1.PriorityLevelConfiguration], generation: true,
		}.strategy(),
	}
}

// storageMigrationStrategies are storagemigration.k8s.io/v1's
// storageversionmigrations: stored; no migrator runs.
func storageMigrationStrategies() []*registry.Strategy {
	return []*registry.Strategy{
		declared[*storagemigrationv1.StorageVersionMigration]{
			kind: storagemigrationv1.SchemeGroupVersion.WithKind("StorageVersionMigration"), resource: "storageversionmigrations",
			newList:  func() runtime.Object { return &storagemigrationv1.StorageVersionMigrationList{} },
			validate: storagemigrationvalidation.ValidateStorageVersionMigration, update: storagemigrationvalidation.ValidateStorageVersionMigrationUpdate,
			status: storagemigrationvalidation.ValidateStorageVersionMigrationStatusUpdate,
		}.strategy(),
	}
}
