package podsync

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/agent/podactions"
)

// AllocationCheckpointFile is the file under the agent's root dir that
// keeps every pod's allocation across agent restarts, as the kubelet's
// allocation manager keeps <root-dir>/allocated_pods_state.
const AllocationCheckpointFile = "allocated_pods_state"

// allocationCheckpoint is the file's content, shaped as the kubelet's
// checkpoint (the data as a JSON string, and a checksum of it: here FNV-32a
// of the bytes, so the kubelet's own files are not read as Kite's).
type allocationCheckpoint struct {
	Data     string `json:"data"`
	Checksum uint32 `json:"checksum"`
}

// allocationEntries are the checkpoint's data: the kubelet's
// PodResourceCheckpointInfo, each pod's allocated container resources by
// container name, and what Kite adds because containerd 1.6 reports no
// container resources: the resources each running instance was given, by
// runtime ID (the kubelet reads them from the runtime's ContainerStatus).
type allocationEntries struct {
	Entries map[types.UID]allocationEntry `json:"entries,omitempty"`
}

type allocationEntry struct {
	ContainerResources map[string]v1.ResourceRequirements `json:"ContainerResources,omitempty"`
	// PodLevelResources are the pod's allocated spec.resources, as the
	// kubelet's PodResourceInfo keeps them.
	PodLevelResources *v1.ResourceRequirements           `json:"PodLevelResources,omitempty"`
	ActuatedResources map[string]v1.ResourceRequirements `json:"ActuatedResources,omitempty"`
}

// entryOf is the checkpoint entry of an allocation and what the pod's
// instances (and, under podactions.PodLevel, its cgroup) were given.
func entryOf(a podactions.Allocation, actuated map[string]v1.ResourceRequirements) allocationEntry {
	e := allocationEntry{ContainerResources: map[string]v1.ResourceRequirements{}, ActuatedResources: actuated}
	for name, r := range a {
		if name == podactions.PodLevel {
			e.PodLevelResources = r.DeepCopy()
			continue
		}
		e.ContainerResources[name] = r
	}
	return e
}

// allocation is the entry's allocation, pod-level resources included.
func (e allocationEntry) allocation() podactions.Allocation {
	a := podactions.Allocation{}
	for name, r := range e.ContainerResources {
		a[name] = r
	}
	if e.PodLevelResources != nil {
		a[podactions.PodLevel] = *e.PodLevelResources.DeepCopy()
	}
	return a
}

// encodeAllocations is the checkpoint of entries.
func encodeAllocations(entries map[types.UID]allocationEntry) ([]byte, error) {
	data, err := json.Marshal(allocationEntries{Entries: entries})
	if err != nil {
		return nil, fmt.Errorf("encode allocations: %w", err)
	}
	h := fnv.New32a()
	h.Write(data)
	return json.Marshal(allocationCheckpoint{Data: string(data), Checksum: h.Sum32()})
}

// decodeAllocations reads a checkpoint; one whose checksum does not match
// its data is an error, as the kubelet's checkpoint manager's.
func decodeAllocations(b []byte) (map[types.UID]allocationEntry, error) {
	var cp allocationCheckpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("decode allocation checkpoint: %w", err)
	}
	h := fnv.New32a()
	h.Write([]byte(cp.Data))
	if h.Sum32() != cp.Checksum {
		return nil, errors.New("allocation checkpoint is corrupted: its checksum does not match its data")
	}
	var e allocationEntries
	if err := json.Unmarshal([]byte(cp.Data), &e); err != nil {
		return nil, fmt.Errorf("decode allocation checkpoint data: %w", err)
	}
	return e.Entries, nil
}

// loadAllocations reads the checkpoint under rootDir; none is no entry.
func loadAllocations(rootDir string) (map[types.UID]allocationEntry, error) {
	b, err := os.ReadFile(filepath.Join(rootDir, AllocationCheckpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read allocation checkpoint: %w", err)
	}
	return decodeAllocations(b)
}

// writeFileAtomic writes b to path through a rename, so a reader (the
// next agent) sees the old content or the new, never a part. No fsync: the
// checkpoint must outlive the agent, not the host, whose reboot ends its
// containers too.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// checkpointAllocations writes the resize state's allocations and
// actuated resources, and the restored entries no pod has claimed yet,
// when they differ from what was written last. Writes are serialized
// (saveMu) so an older snapshot never replaces a newer one.
func (m *Manager) checkpointAllocations() error {
	m.resize.saveMu.Lock()
	defer m.resize.saveMu.Unlock()
	m.mu.Lock()
	entries := make(map[types.UID]allocationEntry, len(m.resize.allocated)+len(m.resize.restored))
	for uid, e := range m.resize.restored {
		entries[uid] = e
	}
	for uid, p := range m.resize.allocated {
		entries[uid] = entryOf(podactions.AllocationOf(p), m.resize.actuated[uid])
	}
	b, err := encodeAllocations(entries)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	if string(b) == string(m.resize.saved) {
		return nil
	}
	if err := writeFileAtomic(filepath.Join(m.opts.RootDir, AllocationCheckpointFile), b); err != nil {
		return err
	}
	m.resize.saved = b
	return nil
}
