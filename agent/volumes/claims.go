package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/apis/storage/localpath"
)

// annProvisionedBy names the provisioner of a dynamically provisioned
// PersistentVolume (pv.kubernetes.io/provisioned-by).
const annProvisionedBy = "pv.kubernetes.io/provisioned-by"

// claimWait is how long a pod's sync waits for its claim to be Bound,
// polling every claimPoll, before it fails and backs off.
const (
	claimWait = 5 * time.Second
	claimPoll = 250 * time.Millisecond
)

// sweepPeriod is how often the agent looks for local-path directories
// whose PersistentVolume is gone.
const sweepPeriod = 5 * time.Second

// claimMount is a persistentVolumeClaim volume resolved to its
// PersistentVolume's directory on this node.
type claimMount struct {
	volume, path string
	readOnly     bool
}

// claimMounts remembers the claim volumes of each pod once resolved: a
// claim stays bound to its volume while a pod uses it (PVC protection),
// so the API is asked once per pod, not on every sync, and the sweeper
// never removes a directory a pod here mounts.
type claimMounts struct {
	mu    sync.Mutex
	byPod map[types.UID]map[string]claimMount
}

func (c *claimMounts) get(uid types.UID, volume string) (claimMount, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.byPod[uid][volume]
	return m, ok
}

func (c *claimMounts) put(uid types.UID, m claimMount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPod[uid] == nil {
		c.byPod[uid] = map[string]claimMount{}
	}
	c.byPod[uid][m.volume] = m
}

func (c *claimMounts) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byPod, uid)
}

func (c *claimMounts) inUse(path string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ms := range c.byPod {
		for _, m := range ms {
			if m.path == path {
				return true
			}
		}
	}
	return false
}

// readOnly says whether the pod's volume is a claim mounted read-only.
func (c *claimMounts) readOnly(uid types.UID, volume string) bool {
	m, ok := c.get(uid, volume)
	return ok && m.readOnly
}

// claimPath resolves a persistentVolumeClaim volume to its directory, as
// the kubelet's desired state of the world does: the claim must exist,
// not be being deleted and be Bound to a PersistentVolume whose claimRef
// is the claim; the volume must be hostPath (checked by its type, a
// local-path volume's directory made 0777 on first use, as rancher's
// provisioner makes it) or local (its path must exist). Until then the
// error keeps the pod ContainerCreating with a FailedMount event.
func (m *Manager) claimPath(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (string, error) {
	if cm, ok := m.claims.get(pod.UID, vol.Name); ok {
		return cm.path, nil
	}
	src := vol.PersistentVolumeClaim
	key := pod.Namespace + "/" + src.ClaimName
	processing := func(format string, args ...any) error {
		return fmt.Errorf("error processing PVC %s: %s", key, fmt.Sprintf(format, args...))
	}
	if m.opts.Client == nil {
		return "", processing("no kubeClient defined")
	}
	// A claim is usually bound a moment after its pod is scheduled (the
	// provisioner makes the volume on the node the scheduler chose): it
	// is waited for a while here, as the kubelet's volume manager polls,
	// rather than after the pod worker's back-off of 10 s.
	deadline := time.Now().Add(claimWait)
	var claim *v1.PersistentVolumeClaim
	for {
		var err error
		claim, err = m.opts.Client.PersistentVolumeClaims(pod.Namespace).Get(ctx, src.ClaimName, metav1.GetOptions{})
		if err != nil {
			return "", processing("failed to fetch PVC from API server: %v", err)
		}
		if claim.DeletionTimestamp != nil {
			return "", processing("can't start pod because PVC %s is being deleted", key)
		}
		if claim.Status.Phase == v1.ClaimBound && claim.Spec.VolumeName != "" {
			break
		}
		if time.Now().After(deadline) {
			return "", processing("PVC is not bound")
		}
		select {
		case <-ctx.Done():
			return "", processing("PVC is not bound")
		case <-time.After(claimPoll):
		}
	}
	pv, err := m.opts.Client.PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", processing("failed to fetch PV %s from API server: %v", claim.Spec.VolumeName, err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != claim.Namespace || ref.Name != claim.Name || ref.UID != claim.UID {
		return "", processing("found PV object %s but it has a ClaimRef that is not bound to the PVC", pv.Name)
	}
	var path string
	switch {
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
		if err := hostPath(pv.Spec.HostPath); err != nil {
			return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", pv.Name, err)
		}
		if pv.Annotations[annProvisionedBy] == localpath.ProvisionerName && m.ownsLocalPath(path) {
			// Writable by the pod's user, whoever it is.
			if err := os.Chmod(path, 0o777); err != nil {
				return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", pv.Name, err)
			}
		}
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("MountVolume.NewMounter initialization failed for volume %q : path %q does not exist", pv.Name, path)
		}
	default:
		return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", pv.Name, errUnsupportedPV)
	}
	m.claims.put(pod.UID, claimMount{volume: vol.Name, path: path, readOnly: src.ReadOnly})
	return path, nil
}

var errUnsupportedPV = errors.New("unsupported volume type: the agent mounts PersistentVolumes of type hostPath and local")

// ownsLocalPath says whether path is a volume directory under this
// agent's local-path directory, the only place the agent makes, opens up
// and removes volume directories of its own.
func (m *Manager) ownsLocalPath(path string) bool {
	dir := localpath.Dir(m.opts.RootDir)
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	return err == nil && rel != "." && !strings.Contains(rel, string(filepath.Separator)) && !strings.HasPrefix(rel, "..")
}

// readOnlyClaims makes the mounts of a claim volume mounted read-only
// (persistentVolumeClaim.readOnly) read-only, whatever the volumeMount
// says. Build's first mounts are the container's volumeMounts, in order.
func (m *Manager) readOnlyClaims(pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) {
	for i, vm := range c.VolumeMounts {
		if i < len(cfg.Mounts) && cfg.Mounts[i].ContainerPath == vm.MountPath && m.claims.readOnly(pod.UID, vm.Name) {
			cfg.Mounts[i].Readonly = true
		}
	}
}

// sweepLocalPath removes, every sweepPeriod, the directories under the
// local-path directory whose PersistentVolume is gone (404): the
// provisioner deletes a released volume of the Delete policy, and only
// the node's agent can reach its directory, remote agents included. A
// directory a pod here mounts, or whose volume cannot be read, stays.
func (m *Manager) sweepLocalPath(ctx context.Context) {
	t := time.NewTicker(sweepPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.SweepLocalPath(ctx)
		}
	}
}

// SweepLocalPath is one pass of the sweep.
func (m *Manager) SweepLocalPath(ctx context.Context) {
	if m.opts.Client == nil {
		return
	}
	dir := localpath.Dir(m.opts.RootDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // none made yet
	}
	logger := klog.FromContext(ctx)
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !e.IsDir() || m.claims.inUse(path) {
			continue
		}
		_, err := m.opts.Client.PersistentVolumes().Get(ctx, e.Name(), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			logger.Error(err, "Could not remove the directory of a deleted local-path volume", "path", path)
			continue
		}
		logger.V(2).Info("Removed the directory of a deleted local-path volume", "volume", e.Name(), "path", path)
	}
}
