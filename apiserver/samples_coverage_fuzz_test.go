package apiserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
)

// coverageSample is sample for the kinds of issue 26: a valid object of
// kind with meta (cluster-scoped kinds drop the namespace), or nil.
func coverageSample(kind schema.GroupVersionKind, meta metav1.ObjectMeta) runtime.Object {
	cluster := meta
	cluster.Namespace = ""
	prefix := networkingv1.PathTypePrefix
	claimSpec := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}
	switch kind.GroupKind() {
	case schema.GroupKind{Kind: "LimitRange"}:
		return &v1.LimitRange{ObjectMeta: meta, Spec: v1.LimitRangeSpec{Limits: []v1.LimitRangeItem{{Type: v1.LimitTypeContainer,
			Max: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}, Min: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}}
	case schema.GroupKind{Kind: "ResourceQuota"}:
		return &v1.ResourceQuota{ObjectMeta: meta, Spec: v1.ResourceQuotaSpec{Hard: v1.ResourceList{v1.ResourcePods: resource.MustParse("10")}}}
	case schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}:
		// The name must be <version>.<group>. A local one: the
		// aggregation layer writes a remote one's Available condition a
		// moment after its create, which the read-back comparison of the
		// body fuzzer would see as a change (test/aggregator tests those).
		cluster.Name += ".example.com"
		return &apiregistrationv1.APIService{ObjectMeta: cluster, Spec: apiregistrationv1.APIServiceSpec{Group: "example.com", Version: meta.Name,
			GroupPriorityMinimum: 100, VersionPriority: 10}}
	case schema.GroupKind{Group: "networking.k8s.io", Kind: "IngressClass"}:
		return &networkingv1.IngressClass{ObjectMeta: cluster, Spec: networkingv1.IngressClassSpec{Controller: "example.com/ingress"}}
	case schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}:
		return &networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "www.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	case schema.GroupKind{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:
		return &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	case schema.GroupKind{Group: "node.k8s.io", Kind: "RuntimeClass"}:
		return &nodev1.RuntimeClass{ObjectMeta: cluster, Handler: "runc"}
	case schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:
		return &schedulingv1.PriorityClass{ObjectMeta: cluster, Value: 1000, Description: "high"}
	case schema.GroupKind{Group: "storage.k8s.io", Kind: "CSIDriver"}:
		return &storagev1.CSIDriver{ObjectMeta: cluster}
	case schema.GroupKind{Group: "storage.k8s.io", Kind: "CSINode"}:
		return &storagev1.CSINode{ObjectMeta: cluster, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "csi.example.com", NodeID: "node-1"}}}}
	case schema.GroupKind{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"}:
		return &storagev1.CSIStorageCapacity{ObjectMeta: meta, StorageClassName: "standard", Capacity: ptr.To(resource.MustParse("10Gi"))}
	case schema.GroupKind{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:
		return &storagev1.VolumeAttachment{ObjectMeta: cluster, Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "node-1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}}}
	case schema.GroupKind{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:
		return &storagev1.VolumeAttributesClass{ObjectMeta: cluster, DriverName: "csi.example.com", Parameters: map[string]string{"iops": "100"}}
	case schema.GroupKind{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: cluster, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: sampleCA()}}
	case schema.GroupKind{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: cluster, Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/signer",
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: sampleCSR()}), Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
	case schema.GroupKind{Group: "certificates.k8s.io", Kind: "PodCertificateRequest"}:
		return &certificatesv1.PodCertificateRequest{ObjectMeta: meta, Spec: certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/signer",
			PodName: "web", PodUID: "1", ServiceAccountName: "default", ServiceAccountUID: "2", NodeName: "node-1", NodeUID: "3", StubPKCS10Request: sampleCSR()}}
	case schema.GroupKind{Group: "resource.k8s.io", Kind: "DeviceClass"}:
		return &resourcev1.DeviceClass{ObjectMeta: cluster, Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == 'gpu.example.com'"}}}}}
	case schema.GroupKind{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:
		return &resourcev1.DeviceTaintRule{ObjectMeta: cluster, Spec: resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "example.com/broken", Effect: resourcev1.DeviceTaintEffectNoSchedule}}}
	case schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceClaim"}:
		return &resourcev1.ResourceClaim{ObjectMeta: meta, Spec: claimSpec}
	case schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceClaimTemplate"}:
		return &resourcev1.ResourceClaimTemplate{ObjectMeta: meta, Spec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec}}
	case schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceSlice"}:
		return &resourcev1.ResourceSlice{ObjectMeta: cluster, Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("node-1"),
			Pool: resourcev1.ResourcePool{Name: "pool-1", ResourceSliceCount: 1}, Devices: []resourcev1.Device{{Name: "gpu-0"}}}}
	case schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:
		return &flowcontrolv1.FlowSchema{ObjectMeta: cluster, Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "global-default"}, MatchingPrecedence: 500,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "example"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}}}}}}
	case schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:
		return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: cluster, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}
	case schema.GroupKind{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}:
		return &storagemigrationv1.StorageVersionMigration{ObjectMeta: cluster, Spec: storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}}}
	}
	return nil
}

// sampleCA is a self-signed CA certificate, PEM-encoded.
func sampleCA() string {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sample-ca"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// sampleCSR is a PKCS#10 request.
func sampleCSR() []byte {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	return der
}
