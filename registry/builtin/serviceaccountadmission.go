package builtin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/storage/names"
	utilptr "k8s.io/utils/ptr"

	"github.com/kite-project/kite/registry"
)

// Upstream's names (plugin/pkg/admission/serviceaccount).
const (
	PluginServiceAccount = "ServiceAccount"
	// DefaultServiceAccountName is the ServiceAccount a pod that names
	// none runs as.
	DefaultServiceAccountName = "default"
	// ServiceAccountVolumeName prefixes the injected volume's name.
	ServiceAccountVolumeName = "kube-api-access"
	// DefaultAPITokenMountPath is where every container finds its token,
	// the cluster's CA and its namespace (rest.InClusterConfig reads it).
	DefaultAPITokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// EnforceMountableSecretsAnnotation on a ServiceAccount limits its
	// pods to the secrets it lists.
	EnforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"
	// boundTokenExpirationSeconds is upstream's
	// WarnOnlyBoundTokenExpirationSeconds: 1h + 7s, the value that tells
	// the authenticator the token is an auto-injected one.
	boundTokenExpirationSeconds = 3607
)

// ServiceAccountPlugin is upstream's ServiceAccount admission: a pod
// created without a ServiceAccount runs as "default"; the ServiceAccount
// must exist; unless the pod or the ServiceAccount says
// automountServiceAccountToken: false, every container and init
// container mounts a projected kube-api-access-<suffix> volume (a bound
// token, kube-root-ca.crt and the namespace) read-only at
// DefaultAPITokenMountPath; the ServiceAccount's imagePullSecrets are the
// pod's when it names none. Mirror pods may reference no ServiceAccount
// and no secret. serviceAccounts returns the ServiceAccounts' Store; it
// is called per request, so it may be filled in after the chain is built.
func ServiceAccountPlugin(serviceAccounts func() *registry.Store) registry.AdmissionPlugin {
	p := &serviceAccountAdmission{serviceAccounts: serviceAccounts, generateName: names.SimpleNameGenerator.GenerateName}
	return registry.AdmissionPlugin{
		Name:     PluginServiceAccount,
		Handles:  func(op admission.Operation) bool { return op == admission.Create || op == admission.Update },
		Admit:    p.admit,
		Validate: p.validate,
	}
}

type serviceAccountAdmission struct {
	serviceAccounts func() *registry.Store
	generateName    func(string) string
}

// serviceAccountPod returns the pod a request is about, or nil when the
// plugin has nothing to say about it (upstream's shouldIgnore).
func serviceAccountPod(a admission.Attributes) *v1.Pod {
	if a.GetResource().GroupResource() != v1.Resource("pods") || (a.GetSubresource() != "" && a.GetSubresource() != "ephemeralcontainers") {
		return nil
	}
	pod, _ := a.GetObject().(*v1.Pod)
	return pod
}

func (p *serviceAccountAdmission) admit(ctx context.Context, a admission.Attributes) error {
	pod := serviceAccountPod(a)
	if pod == nil || a.GetOperation() != admission.Create {
		return nil
	}
	if _, mirror := pod.Annotations[v1.MirrorPodAnnotationKey]; mirror {
		return p.validate(ctx, a)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
		pod.Spec.DeprecatedServiceAccount = DefaultServiceAccountName //nolint:staticcheck // set for old clients, as upstream
	}
	sa, err := p.get(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	if ShouldAutomountServiceAccountToken(sa, pod) {
		MountServiceAccountToken(pod, p.generateName(ServiceAccountVolumeName+"-"))
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = append([]v1.LocalObjectReference(nil), sa.ImagePullSecrets...)
	}
	return p.validate(ctx, a)
}

func (p *serviceAccountAdmission) validate(ctx context.Context, a admission.Attributes) error {
	pod := serviceAccountPod(a)
	if pod == nil {
		return nil
	}
	ephemeral := a.GetOperation() == admission.Update && a.GetSubresource() == "ephemeralcontainers"
	if !ephemeral && a.GetOperation() != admission.Create {
		return nil
	}
	if _, mirror := pod.Annotations[v1.MirrorPodAnnotationKey]; mirror && !ephemeral {
		if err := MirrorPodServiceAccountRefs(pod); err != nil {
			return admission.NewForbidden(a, err)
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		return admission.NewForbidden(a, fmt.Errorf("no service account specified for pod %s/%s", a.GetNamespace(), pod.Name))
	}
	sa, err := p.get(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	if v, ok := sa.Annotations[EnforceMountableSecretsAnnotation]; ok {
		if enforce, _ := strconv.ParseBool(v); enforce {
			if err := MountableSecretRefs(sa, pod, ephemeral); err != nil {
				return admission.NewForbidden(a, err)
			}
		}
	}
	return nil
}

// get reads a ServiceAccount. The default one is waited for a little, as
// upstream (10 tries 100-200 ms apart): the serviceaccount controller
// creates it just after its namespace.
func (p *serviceAccountAdmission) get(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error) {
	store := p.serviceAccounts()
	if store == nil {
		return nil, fmt.Errorf("serviceaccounts are not served yet")
	}
	tries := 1
	if name == DefaultServiceAccountName {
		tries = 10
	}
	interval := time.Duration(100+rand.IntN(100)) * time.Millisecond
	for i := range tries {
		if i > 0 {
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		obj, err := store.Get(ctx, namespace, name, &metav1.GetOptions{})
		if err == nil {
			return obj.(*v1.ServiceAccount), nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	// Upstream names the resource in the singular here.
	return nil, apierrors.NewNotFound(v1.Resource("serviceaccount"), name)
}

// ShouldAutomountServiceAccountToken is upstream's shouldAutomount: the
// pod's word, else the ServiceAccount's, else yes.
func ShouldAutomountServiceAccountToken(sa *v1.ServiceAccount, pod *v1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// MountServiceAccountToken is upstream's mountServiceAccountToken: every
// container and init container without a mount at
// DefaultAPITokenMountPath gets one of the pod's kube-api-access-*
// volume, added under volumeName when the pod has none. Ephemeral
// containers get nothing, as upstream.
func MountServiceAccountToken(pod *v1.Pod, volumeName string) {
	hasVolume := false
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, ServiceAccountVolumeName+"-") {
			volumeName, hasVolume = v.Name, true
			break
		}
	}
	mount := v1.VolumeMount{Name: volumeName, ReadOnly: true, MountPath: DefaultAPITokenMountPath}
	needed := false
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !mountsAt(cs[i].VolumeMounts, DefaultAPITokenMountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if !hasVolume && needed {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: volumeName, VolumeSource: v1.VolumeSource{Projected: TokenVolumeSource()}})
	}
}

func mountsAt(mounts []v1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// TokenVolumeSource is upstream's: a bound token, the cluster's CA and
// the pod's namespace.
func TokenVolumeSource() *v1.ProjectedVolumeSource {
	return &v1.ProjectedVolumeSource{
		DefaultMode: utilptr.To(v1.ProjectedVolumeSourceDefaultMode),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: utilptr.To[int64](boundTokenExpirationSeconds)}},
			{ConfigMap: &v1.ConfigMapProjection{
				LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{
				Path:     "namespace",
				FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}

// MirrorPodServiceAccountRefs refuses a mirror pod that names a
// ServiceAccount, a secret or a token projection: the node made it, and
// a node's pods get no API credentials (upstream's messages).
func MirrorPodServiceAccountRefs(pod *v1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return fmt.Errorf("a mirror pod may not reference service accounts")
	}
	if len(podSecretNames(pod)) > 0 {
		return fmt.Errorf("a mirror pod may not reference secrets")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return fmt.Errorf("a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// podSecretNames lists the secrets a pod references, as upstream's
// VisitPodSecretNames over all containers.
func podSecretNames(pod *v1.Pod) []string {
	var out []string
	add := func(ref *v1.LocalObjectReference) {
		if ref != nil && ref.Name != "" {
			out = append(out, ref.Name)
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		out = append(out, s.Name)
	}
	envs := func(env []v1.EnvVar, from []v1.EnvFromSource) {
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				out = append(out, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, f := range from {
			if f.SecretRef != nil {
				out = append(out, f.SecretRef.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		envs(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.Containers {
		envs(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		envs(c.Env, c.EnvFrom)
	}
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.Secret != nil:
			out = append(out, s.Secret.SecretName)
		case s.AzureFile != nil:
			out = append(out, s.AzureFile.SecretName)
		case s.CephFS != nil:
			add(s.CephFS.SecretRef)
		case s.Cinder != nil:
			add(s.Cinder.SecretRef)
		case s.FlexVolume != nil:
			add(s.FlexVolume.SecretRef)
		case s.RBD != nil:
			add(s.RBD.SecretRef)
		case s.ScaleIO != nil:
			add(s.ScaleIO.SecretRef)
		case s.ISCSI != nil:
			add(s.ISCSI.SecretRef)
		case s.StorageOS != nil:
			add(s.StorageOS.SecretRef)
		case s.CSI != nil:
			add(s.CSI.NodePublishSecretRef)
		case s.Projected != nil:
			for _, p := range s.Projected.Sources {
				if p.Secret != nil {
					out = append(out, p.Secret.Name)
				}
			}
		}
	}
	return out
}

// MountableSecretRefs is upstream's limitSecretReferences (and, for the
// ephemeralcontainers subresource, limitEphemeralContainerSecretReferences):
// with the enforce-mountable-secrets annotation, a pod may use only the
// secrets its ServiceAccount lists.
func MountableSecretRefs(sa *v1.ServiceAccount, pod *v1.Pod, ephemeralOnly bool) error {
	mountable := map[string]bool{}
	for _, s := range sa.Secrets {
		mountable[s.Name] = true
	}
	containers := func(kind string, env func(i int) (string, []v1.EnvVar, []v1.EnvFromSource), n int) error {
		for i := range n {
			name, vars, from := env(i)
			for _, e := range vars {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !mountable[e.ValueFrom.SecretKeyRef.Name] {
					return fmt.Errorf("%s %s with envVar %s referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", kind, name, e.Name, e.ValueFrom.SecretKeyRef.Name, sa.Name)
				}
			}
			for _, f := range from {
				if f.SecretRef != nil && !mountable[f.SecretRef.Name] {
					return fmt.Errorf("%s %s with envFrom referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", kind, name, f.SecretRef.Name, sa.Name)
				}
			}
		}
		return nil
	}
	if ephemeralOnly {
		ec := pod.Spec.EphemeralContainers
		return containers("ephemeral container", func(i int) (string, []v1.EnvVar, []v1.EnvFromSource) {
			return ec[i].Name, ec[i].Env, ec[i].EnvFrom
		}, len(ec))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && !mountable[v.Secret.SecretName] {
			return fmt.Errorf("volume with secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", v.Secret.SecretName, sa.Name)
		}
	}
	for _, group := range []struct {
		kind string
		cs   []v1.Container
	}{{"init container", pod.Spec.InitContainers}, {"container", pod.Spec.Containers}} {
		cs := group.cs
		if err := containers(group.kind, func(i int) (string, []v1.EnvVar, []v1.EnvFromSource) {
			return cs[i].Name, cs[i].Env, cs[i].EnvFrom
		}, len(cs)); err != nil {
			return err
		}
	}
	pull := map[string]bool{}
	for _, s := range sa.ImagePullSecrets {
		pull[s.Name] = true
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		if !pull[ref.Name] {
			return fmt.Errorf(`imagePullSecrets[%d].name="%s" is not allowed because service account %s does not reference that imagePullSecret`, i, ref.Name, sa.Name)
		}
	}
	return nil
}
