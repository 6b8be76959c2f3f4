package validation

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedHostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
	corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket,
	corev1.HostPathCharDev, corev1.HostPathBlockDev,
}

// validateVolumes checks names (DNS-1123 labels, unique) and that each
// volume has exactly one valid source. It returns the valid volumes by name,
// for the volume mounts to refer to.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var allErrs field.ErrorList
	vols := map[string]corev1.VolumeSource{}
	for i, vol := range volumes {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		el := validateVolumeSource(&vol.VolumeSource, idxPath)
		if vol.Name == "" {
			el = append(el, field.Required(namePath, ""))
		} else {
			el = append(el, validateDNS1123Label(vol.Name, namePath)...)
		}
		if _, dup := vols[vol.Name]; dup {
			el = append(el, field.Duplicate(namePath, vol.Name))
		}
		if len(el) == 0 {
			vols[vol.Name] = vol.VolumeSource
		} else {
			allErrs = append(allErrs, el...)
		}
	}
	return vols, allErrs
}

// volumeType is one of the mutually exclusive sources of a volume, with
// the checks Kite applies to it (nil: only counted). dupName is the name
// upstream's "more than 1 volume type" error uses, which for two sources
// differs from the field's ("cephFS", and the typo "downwarAPI").
type volumeType struct {
	name, dupName string
	set           bool
	validate      func(*field.Path) field.ErrorList
}

func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	required := func(value, child string) func(*field.Path) field.ErrorList {
		return func(p *field.Path) field.ErrorList {
			if value == "" {
				return field.ErrorList{field.Required(p.Child(child), "")}
			}
			return nil
		}
	}
	// Upstream's order, which decides which source the "more than 1" error
	// names.
	types := []volumeType{
		{"emptyDir", "", src.EmptyDir != nil, func(p *field.Path) field.ErrorList {
			if l := src.EmptyDir.SizeLimit; l != nil && l.Cmp(resource.Quantity{}) < 0 {
				return field.ErrorList{field.Forbidden(p.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity")}
			}
			return nil
		}},
		{"hostPath", "", src.HostPath != nil, func(p *field.Path) field.ErrorList { return validateHostPathVolumeSource(src.HostPath, p) }},
		{"gitRepo", "", src.GitRepo != nil, func(p *field.Path) field.ErrorList {
			allErrs := required(src.GitRepo.Repository, "repository")(p)
			return append(allErrs, validateLocalDescendingPath(src.GitRepo.Directory, p.Child("directory"))...)
		}},
		{"gcePersistentDisk", "", src.GCEPersistentDisk != nil, nil},
		{"awsElasticBlockStore", "", src.AWSElasticBlockStore != nil, nil},
		{"secret", "", src.Secret != nil, func(p *field.Path) field.ErrorList { return validateSecretVolumeSource(src.Secret, p) }},
		{"nfs", "", src.NFS != nil, func(p *field.Path) field.ErrorList { return validateNFSVolumeSource(src.NFS, p) }},
		{"iscsi", "", src.ISCSI != nil, nil},
		{"glusterfs", "", src.Glusterfs != nil, nil},
		{"flocker", "", src.Flocker != nil, nil},
		{"persistentVolumeClaim", "", src.PersistentVolumeClaim != nil, func(p *field.Path) field.ErrorList {
			return required(src.PersistentVolumeClaim.ClaimName, "claimName")(p)
		}},
		{"rbd", "", src.RBD != nil, nil},
		{"cinder", "", src.Cinder != nil, nil},
		{"cephfs", "cephFS", src.CephFS != nil, nil},
		{"quobyte", "", src.Quobyte != nil, nil},
		{"downwardAPI", "downwarAPI", src.DownwardAPI != nil, func(p *field.Path) field.ErrorList { return validateDownwardAPIVolumeSource(src.DownwardAPI, p) }},
		{"fc", "", src.FC != nil, nil},
		{"flexVolume", "", src.FlexVolume != nil, func(p *field.Path) field.ErrorList { return required(src.FlexVolume.Driver, "driver")(p) }},
		{"configMap", "", src.ConfigMap != nil, func(p *field.Path) field.ErrorList { return validateConfigMapVolumeSource(src.ConfigMap, p) }},
		{"azureFile", "", src.AzureFile != nil, nil},
		{"vsphereVolume", "", src.VsphereVolume != nil, nil},
		{"photonPersistentDisk", "", src.PhotonPersistentDisk != nil, nil},
		{"portworxVolume", "", src.PortworxVolume != nil, nil},
		{"azureDisk", "", src.AzureDisk != nil, nil},
		{"storageos", "", src.StorageOS != nil, nil},
		{"projected", "", src.Projected != nil, func(p *field.Path) field.ErrorList { return validateProjectedVolumeSource(src.Projected, p) }},
		{"scaleIO", "", src.ScaleIO != nil, nil},
		{"csi", "", src.CSI != nil, func(p *field.Path) field.ErrorList { return required(src.CSI.Driver, "driver")(p) }},
		{"ephemeral", "", src.Ephemeral != nil, func(p *field.Path) field.ErrorList {
			if src.Ephemeral.VolumeClaimTemplate == nil {
				return field.ErrorList{field.Required(p.Child("volumeClaimTemplate"), "")}
			}
			return nil
		}},
		{"image", "", src.Image != nil, func(p *field.Path) field.ErrorList {
			if src.Image.Reference == "" {
				return field.ErrorList{field.Required(p.Child("reference"), "")}
			}
			return validatePullPolicy(src.Image.PullPolicy, p.Child("pullPolicy"))
		}},
	}
	var allErrs field.ErrorList
	n := 0
	for _, t := range types {
		if !t.set {
			continue
		}
		if n > 0 {
			name := t.name
			if t.dupName != "" {
				name = t.dupName
			}
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
			continue
		}
		n++
		if t.validate != nil {
			allErrs = append(allErrs, t.validate(fldPath.Child(t.name))...)
		}
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a volume type"))
	}
	return allErrs
}

func validateHostPathVolumeSource(hp *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if hp.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	allErrs := validatePathNoBacksteps(hp.Path, fldPath.Child("path"))
	if hp.Type != nil {
		ok := false
		for _, t := range supportedHostPathTypes {
			ok = ok || *hp.Type == t
		}
		if !ok {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), *hp.Type, supportedHostPathTypes))
		}
	}
	return allErrs
}

func validateNFSVolumeSource(nfs *corev1.NFSVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if nfs.Server == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("server"), ""))
	}
	if nfs.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	if !path.IsAbs(nfs.Path) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), nfs.Path, "must be an absolute path"))
	}
	return allErrs
}

func validateSecretVolumeSource(s *corev1.SecretVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.SecretName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("secretName"), ""))
	}
	allErrs = append(allErrs, validateFileMode(s.DefaultMode, fldPath.Child("defaultMode"))...)
	for i := range s.Items {
		allErrs = append(allErrs, validateKeyToPath(&s.Items[i], fldPath.Child("items").Index(i))...)
	}
	return allErrs
}

func validateConfigMapVolumeSource(c *corev1.ConfigMapVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	allErrs = append(allErrs, validateFileMode(c.DefaultMode, fldPath.Child("defaultMode"))...)
	for i := range c.Items {
		allErrs = append(allErrs, validateKeyToPath(&c.Items[i], fldPath.Child("items").Index(i))...)
	}
	return allErrs
}

func validateDownwardAPIVolumeSource(d *corev1.DownwardAPIVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateFileMode(d.DefaultMode, fldPath.Child("defaultMode"))
	for i := range d.Items {
		// Upstream reports item errors under the volume source, without
		// "items[i]".
		allErrs = append(allErrs, validateDownwardAPIVolumeFile(&d.Items[i], fldPath)...)
	}
	return allErrs
}

// validDownwardAPIVolumeFieldPaths are the fields a downward API volume
// file may hold (labels and annotations as whole maps, or one key).
var validDownwardAPIVolumeFieldPaths = []string{
	"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
}

func validateDownwardAPIVolumeFile(f *corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if f.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validateLocalNonReservedPath(f.Path, fldPath.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		allErrs = append(allErrs, validateObjectFieldSelector(f.FieldRef, validDownwardAPIVolumeFieldPaths, fldPath.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		allErrs = append(allErrs, validateResourceFieldSelector(f.ResourceFieldRef, true, fldPath.Child("resourceFieldRef"))...)
	default:
		allErrs = append(allErrs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	allErrs = append(allErrs, validateFileMode(f.Mode, fldPath.Child("mode"))...)
	return allErrs
}

// validateProjectedVolumeSource: one source per entry, each valid, and no
// two files at the same path. The quirks of upstream's paths are kept: the
// token's path and duplicate paths are reported at "projected", downward API
// items at "downwardAPI".
func validateProjectedVolumeSource(p *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateFileMode(p.DefaultMode, fldPath.Child("defaultMode"))
	paths := map[string]bool{}
	claim := func(path string, value any) {
		if path == "" {
			return
		}
		if paths[path] {
			allErrs = append(allErrs, field.Invalid(fldPath, value, "conflicting duplicate paths"))
		}
		paths[path] = true
	}
	for i, s := range p.Sources {
		srcPath := fldPath.Child("sources").Index(i)
		n := 0
		if s.Secret != nil {
			n++
			projPath := srcPath.Child("secret")
			if s.Secret.Name == "" {
				allErrs = append(allErrs, field.Required(projPath.Child("name"), ""))
			}
			for j := range s.Secret.Items {
				allErrs = append(allErrs, validateKeyToPath(&s.Secret.Items[j], projPath.Child("items").Index(j))...)
				claim(s.Secret.Items[j].Path, s.Secret.Name)
			}
		}
		if s.ConfigMap != nil {
			n++
			projPath := srcPath.Child("configMap")
			if s.ConfigMap.Name == "" {
				allErrs = append(allErrs, field.Required(projPath.Child("name"), ""))
			}
			for j := range s.ConfigMap.Items {
				allErrs = append(allErrs, validateKeyToPath(&s.ConfigMap.Items[j], projPath.Child("items").Index(j))...)
				claim(s.ConfigMap.Items[j].Path, s.ConfigMap.Name)
			}
		}
		if s.DownwardAPI != nil {
			n++
			for j := range s.DownwardAPI.Items {
				allErrs = append(allErrs, validateDownwardAPIVolumeFile(&s.DownwardAPI.Items[j], srcPath.Child("downwardAPI"))...)
				claim(s.DownwardAPI.Items[j].Path, s.DownwardAPI.Items[j].Path)
			}
		}
		if t := s.ServiceAccountToken; t != nil {
			n++
			tokPath := srcPath.Child("serviceAccountToken")
			// Defaulting sets one hour; nil means not defaulted yet.
			if t.ExpirationSeconds != nil {
				if e := *t.ExpirationSeconds; e < 10*60 {
					allErrs = append(allErrs, field.Invalid(tokPath.Child("expirationSeconds"), e, "may not specify a duration less than 10 minutes"))
				} else if e > 1<<32 {
					allErrs = append(allErrs, field.Invalid(tokPath.Child("expirationSeconds"), e, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if t.Path == "" {
				allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
			} else {
				allErrs = append(allErrs, validateLocalNonReservedPath(t.Path, fldPath.Child("path"))...)
			}
		}
		if s.ClusterTrustBundle != nil {
			n++
			claim(s.ClusterTrustBundle.Path, s.ClusterTrustBundle.Path)
		}
		if s.PodCertificate != nil {
			n++
			allErrs = append(allErrs, validatePodCertificateExpiration(s.PodCertificate, srcPath.Child("podCertificate", "maxExpirationSeconds"))...)
		}
		if n > 1 {
			allErrs = append(allErrs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
	}
	return allErrs
}

func validateKeyToPath(kp *corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if kp.Key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	}
	if kp.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validateLocalNonReservedPath(kp.Path, fldPath.Child("path"))...)
	allErrs = append(allErrs, validateFileMode(kp.Mode, fldPath.Child("mode"))...)
	return allErrs
}

func validateFileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

// validateLocalDescendingPath: a relative path that stays below its root.
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if path.IsAbs(p) {
		allErrs = append(allErrs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	return append(allErrs, validatePathNoBacksteps(p, fldPath)...)
}

// validateLocalNonReservedPath: as validateLocalDescendingPath, and not
// starting with "..", which the atomic writer of the node agent reserves.
func validateLocalNonReservedPath(p string, fldPath *field.Path) field.ErrorList {
	allErrs := validateLocalDescendingPath(p, fldPath)
	if strings.HasPrefix(p, "..") {
		allErrs = append(allErrs, field.Invalid(fldPath, p, "must not start with '..'"))
	}
	return allErrs
}

func validatePathNoBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

var supportedMountPropagations = []corev1.MountPropagationMode{
	corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone,
}

// validateVolumeMounts: each mount names a valid volume of the pod, has a
// unique mount path, and a subPath that stays inside the volume.
func validateVolumeMounts(mounts []corev1.VolumeMount, ctr *corev1.Container, vols map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mountPoints := map[string]bool{}
	for i, m := range mounts {
		idxPath := fldPath.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		}
		if _, ok := vols[m.Name]; !ok {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("mountPath"), ""))
		}
		if mountPoints[m.MountPath] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPoints[m.MountPath] = true
		// subPath and subPathExpr of an image volume are allowed since
		// 1.33 (upstream's validateVolumeMounts has no check of its own).
		if m.SubPath != "" {
			// Upstream reports subPath under the list, not the item.
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPath, fldPath.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPathExpr, fldPath.Child("subPathExpr"))...)
		}
		// Upstream reports propagation under the list, not the item.
		if mp := m.MountPropagation; mp != nil {
			propPath := fldPath.Child("mountPropagation")
			ok := false
			for _, s := range supportedMountPropagations {
				ok = ok || *mp == s
			}
			if !ok {
				allErrs = append(allErrs, field.NotSupported(propPath, *mp, supportedMountPropagations))
			}
			if *mp == corev1.MountPropagationBidirectional && !isPrivileged(ctr) {
				allErrs = append(allErrs, field.Forbidden(propPath, "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
	}
	return allErrs
}

func isPrivileged(ctr *corev1.Container) bool {
	sc := ctr.SecurityContext
	return sc != nil && sc.Privileged != nil && *sc.Privileged
}
