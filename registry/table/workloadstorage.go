package table

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

func registerWorkloadStorage(c *Convertor) {
	c.register(statefulSetPrinter, &appsv1.StatefulSet{}, &appsv1.StatefulSetList{})
	c.register(daemonSetPrinter, &appsv1.DaemonSet{}, &appsv1.DaemonSetList{})
	c.register(persistentVolumePrinter, &corev1.PersistentVolume{}, &corev1.PersistentVolumeList{})
	c.register(persistentVolumeClaimPrinter, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolumeClaimList{})
	c.register(storageClassPrinter(""), &storagev1.StorageClass{}, &storagev1.StorageClassList{})
}

// statefulSetPrinter is upstream's printStatefulSet: no selector column.
var statefulSetPrinter = &printer{
	columns: append([]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		ageColumn,
	}, templateColumns("")[:2]...),
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		s := obj.(*appsv1.StatefulSet)
		cells := []any{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, int32Value(s.Spec.Replicas)), age(s.CreationTimestamp, now)}
		return append(cells, templateCells(&s.Spec.Template.Spec, "")[:2]...), nil
	},
}

var daemonSetPrinter = &printer{
	columns: append([]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Desired", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]},
		{Name: "Current", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]},
		{Name: "Ready", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]},
		{Name: "Up-to-date", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]},
		{Name: "Available", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]},
		{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
		ageColumn,
	}, templateColumns(appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"])...),
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		ds := obj.(*appsv1.DaemonSet)
		st := &ds.Status
		cells := []any{ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
			int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector), age(ds.CreationTimestamp, now)}
		return append(cells, templateCells(&ds.Spec.Template.Spec, metav1.FormatLabelSelector(ds.Spec.Selector))...), nil
	},
}

var persistentVolumePrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]},
		{Name: "Reclaim Policy", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]},
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]},
		{Name: "Claim", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pv"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pv"},
		{Name: "Reason", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]},
		ageColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"]},
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		pv := obj.(*corev1.PersistentVolume)
		claim := ""
		if ref := pv.Spec.ClaimRef; ref != nil {
			claim = ref.Namespace + "/" + ref.Name
		}
		phase := string(pv.Status.Phase)
		if pv.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		class := pv.Spec.StorageClassName
		if c, ok := pv.Annotations[corev1.BetaStorageClassAnnotation]; ok {
			class = c
		}
		size := pv.Spec.Capacity[corev1.ResourceStorage]
		return []any{pv.Name, size.String(), AccessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
			phase, claim, class, unsetOr(pv.Spec.VolumeAttributesClassName), pv.Status.Reason, age(pv.CreationTimestamp, now),
			volumeMode(pv.Spec.VolumeMode)}, nil
	},
}

var persistentVolumeClaimPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]},
		{Name: "Volume", Type: "string", Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]},
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pvc"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pvc"},
		ageColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]},
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		pvc := obj.(*corev1.PersistentVolumeClaim)
		phase := string(pvc.Status.Phase)
		if pvc.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		capacity, modes := "", ""
		if pvc.Spec.VolumeName != "" {
			modes = AccessModes(pvc.Status.AccessModes)
			q := pvc.Status.Capacity[corev1.ResourceStorage]
			capacity = q.String()
		}
		class := ""
		if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
			class = c
		} else if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		return []any{pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class, unsetOr(pvc.Spec.VolumeAttributesClassName),
			age(pvc.CreationTimestamp, now), volumeMode(pvc.Spec.VolumeMode)}, nil
	},
}

// storageClassPrinter is upstream's printStorageClassInternal: in a list
// the effective default class (the newest of those annotated default;
// the first by name among equals) is named "<name> (default)".
func storageClassPrinter(effectiveDefault string) *printer {
	return &printer{
		columns: []metav1.TableColumnDefinition{
			nameColumn,
			{Name: "Provisioner", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["provisioner"]},
			{Name: "ReclaimPolicy", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]},
			{Name: "VolumeBindingMode", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]},
			{Name: "AllowVolumeExpansion", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]},
			ageColumn,
		},
		row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
			sc := obj.(*storagev1.StorageClass)
			name := sc.Name
			if effectiveDefault != "" && name == effectiveDefault {
				name += " (default)"
			}
			reclaim := string(corev1.PersistentVolumeReclaimDelete)
			if sc.ReclaimPolicy != nil {
				reclaim = string(*sc.ReclaimPolicy)
			}
			mode := string(storagev1.VolumeBindingImmediate)
			if sc.VolumeBindingMode != nil {
				mode = string(*sc.VolumeBindingMode)
			}
			expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
			return []any{name, sc.Provisioner, reclaim, mode, expand, age(sc.CreationTimestamp, now)}, nil
		},
		forList: func(list runtime.Object) *printer {
			return storageClassPrinter(EffectiveDefaultStorageClass(list.(*storagev1.StorageClassList).Items))
		},
	}
}

// IsDefaultStorageClass says whether a class is annotated default (the GA
// or the beta annotation), as upstream's IsDefaultAnnotation.
func IsDefaultStorageClass(m metav1.ObjectMeta) bool {
	return m.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" ||
		m.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true"
}

// EffectiveDefaultStorageClass is the name of the newest class annotated
// default (the first by name among equally old ones), or "".
func EffectiveDefaultStorageClass(items []storagev1.StorageClass) string {
	var def *storagev1.StorageClass
	for i := range items {
		sc := &items[i]
		if !IsDefaultStorageClass(sc.ObjectMeta) {
			continue
		}
		if def == nil || sc.CreationTimestamp.After(def.CreationTimestamp.Time) ||
			(sc.CreationTimestamp.Equal(&def.CreationTimestamp) && sc.Name < def.Name) {
			def = sc
		}
	}
	if def == nil {
		return ""
	}
	return def.Name
}

// AccessModes is upstream's GetAccessModesAsString: RWO, ROX, RWX, RWOP
// in that order, each once.
func AccessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		for _, have := range modes {
			if have == m.mode {
				out = append(out, m.short)
				break
			}
		}
	}
	return strings.Join(out, ",")
}

func unsetOr(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

func volumeMode(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}
