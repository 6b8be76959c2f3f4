package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func validClaim() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeMode:  ptr.To(corev1.PersistentVolumeFilesystem),
		},
	}
}

func TestValidatePersistentVolumeClaim(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim)
		want   []want
	}{
		{"valid", func(*corev1.PersistentVolumeClaim) {}, nil},
		{"access modes required", func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = nil },
			[]want{{field.ErrorTypeRequired, "spec.accessModes"}}},
		{"unknown access mode", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes"}
		},
			[]want{{field.ErrorTypeNotSupported, "spec.accessModes"}}},
		{"ReadWriteOncePod alone", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = append(c.Spec.AccessModes, corev1.ReadWriteOncePod)
		}, []want{{field.ErrorTypeForbidden, "spec.accessModes"}}},
		{"storage request required", func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil },
			[]want{{field.ErrorTypeRequired, "spec.resources[storage]"}}},
		{"storage request positive", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		}, []want{{field.ErrorTypeInvalid, "spec.resources[storage]"}}},
		{"class name a subdomain", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("Fast_SSD") },
			[]want{{field.ErrorTypeInvalid, "spec.storageClassName"}}},
		{"data source of the core group is a claim", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "Snapshot", Name: "s"}
		}, []want{{field.ErrorTypeInvalid, "spec.dataSource"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validClaim()
			tc.mutate(c)
			checkErrors(t, ValidatePersistentVolumeClaim(c), tc.want...)
		})
	}
}

func TestValidatePersistentVolumeClaimUpdate(t *testing.T) {
	bound := func(c *corev1.PersistentVolumeClaim) {
		c.Spec.VolumeName = "pv1"
		c.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
	}
	tests := []struct {
		name   string
		old    func(*corev1.PersistentVolumeClaim)
		mutate func(*corev1.PersistentVolumeClaim)
		want   []want
	}{
		{"volumeName may be set once", func(*corev1.PersistentVolumeClaim) {}, func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv1" }, nil},
		{"volumeName may not change", bound, func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv2" },
			[]want{{field.ErrorTypeForbidden, "spec"}}},
		{"a bound claim may grow", bound, func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}, nil},
		{"an unbound claim may not grow", func(*corev1.PersistentVolumeClaim) {}, func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}, []want{{field.ErrorTypeForbidden, "spec"}}},
		{"no shrinking below the capacity", bound, func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("512Mi")
		}, []want{{field.ErrorTypeForbidden, "spec.resources.requests.storage"}}},
		{"a class may be given to a claim without one", func(*corev1.PersistentVolumeClaim) {},
			func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("fast") }, nil},
		{"a class may not change", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("slow") },
			func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("fast") }, []want{{field.ErrorTypeForbidden, "spec"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validClaim()
			tc.old(old)
			c := old.DeepCopy()
			tc.mutate(c)
			checkErrors(t, ValidatePersistentVolumeClaimUpdate(c, old), tc.want...)
		})
	}
}

func validVolume() *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/pv1"}},
		},
	}
}

func TestValidatePersistentVolume(t *testing.T) {
	local := corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}}
	affinity := &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolume)
		want   []want
	}{
		{"valid hostPath", func(*corev1.PersistentVolume) {}, nil},
		{"valid local with node affinity", func(pv *corev1.PersistentVolume) {
			pv.Spec.PersistentVolumeSource, pv.Spec.NodeAffinity = local, affinity
		}, nil},
		{"local needs node affinity", func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeSource = local },
			[]want{{field.ErrorTypeRequired, "spec.nodeAffinity"}}},
		{"node affinity needs required", func(pv *corev1.PersistentVolume) { pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{} },
			[]want{{field.ErrorTypeRequired, "spec.nodeAffinity.required"}}},
		{"a source is required", func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{} },
			[]want{{field.ErrorTypeRequired, "spec"}}},
		{"one source only", func(pv *corev1.PersistentVolume) { pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "s", Path: "/x"} },
			[]want{{field.ErrorTypeForbidden, "spec.nfs"}}},
		{"capacity is storage only", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceCPU] = resource.MustParse("1") },
			[]want{{field.ErrorTypeNotSupported, "spec.capacity"}}},
		{"capacity required", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil },
			[]want{{field.ErrorTypeRequired, "spec.capacity"}, {field.ErrorTypeNotSupported, "spec.capacity"}}},
		{"access modes required", func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil },
			[]want{{field.ErrorTypeRequired, "spec.accessModes"}}},
		{"unknown reclaim policy", func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Keep" },
			[]want{{field.ErrorTypeNotSupported, "spec.persistentVolumeReclaimPolicy"}}},
		{"no recycling of /", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath.Path, pv.Spec.PersistentVolumeReclaimPolicy = "/", corev1.PersistentVolumeReclaimRecycle
		}, []want{{field.ErrorTypeForbidden, "spec.persistentVolumeReclaimPolicy"}}},
		{"csi needs driver and handle", func(pv *corev1.PersistentVolume) {
			pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{}}
		}, []want{{field.ErrorTypeRequired, "spec.csi.driver"}, {field.ErrorTypeRequired, "spec.csi.volumeHandle"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pv := validVolume()
			tc.mutate(pv)
			checkErrors(t, ValidatePersistentVolume(pv), tc.want...)
		})
	}
}

func TestValidatePersistentVolumeUpdateKeepsTheSource(t *testing.T) {
	old := validVolume()
	pv := old.DeepCopy()
	pv.Spec.HostPath.Path = "/srv/other"
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete // may change
	checkErrors(t, ValidatePersistentVolumeUpdate(pv, old), want{field.ErrorTypeForbidden, "spec.persistentvolumesource"})
}
