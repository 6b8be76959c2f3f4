package containerconfig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Volume plugin directory names, as upstream's (kubernetes.io~<plugin>),
// under <root>/pods/<uid>/volumes.
const (
	pluginEmptyDir    = "kubernetes.io~empty-dir"
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginProjected   = "kubernetes.io~projected"
)

// PodDir is the pod's directory under the root: <root>/pods/<uid>.
func (b *Builder) PodDir(pod *v1.Pod) string {
	return filepath.Join(b.rootDir, "pods", string(pod.UID))
}

// Volumes materialises the pod's volumes under its directory and returns
// the host path of each by volume name. It is safe to call again: content
// volumes (configMap, secret, downwardAPI, projected) are rewritten
// atomically; an emptyDir keeps what is in it. An error says which volume
// failed and why, as upstream's "MountVolume.SetUp failed for volume ..."
// message.
func (b *Builder) Volumes(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	paths := map[string]string{}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		path, err := b.volume(ctx, pod, vol)
		if err != nil {
			return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
		}
		paths[vol.Name] = path
	}
	return paths, nil
}

func (b *Builder) volume(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (string, error) {
	dir := func(plugin string) string { return filepath.Join(b.PodDir(pod), "volumes", plugin, vol.Name) }
	switch {
	case vol.EmptyDir != nil:
		d := dir(pluginEmptyDir)
		return d, os.MkdirAll(d, 0o777)
	case vol.HostPath != nil:
		return vol.HostPath.Path, b.hostPath(vol.HostPath)
	case vol.ConfigMap != nil:
		files, err := b.configMapFiles(ctx, pod, &v1.ConfigMapProjection{LocalObjectReference: vol.ConfigMap.LocalObjectReference, Items: vol.ConfigMap.Items, Optional: vol.ConfigMap.Optional}, mode(vol.ConfigMap.DefaultMode))
		if err != nil {
			return "", err
		}
		d := dir(pluginConfigMap)
		return d, writeAtomic(d, files)
	case vol.Secret != nil:
		files, err := b.secretFiles(ctx, pod, &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: vol.Secret.SecretName}, Items: vol.Secret.Items, Optional: vol.Secret.Optional}, mode(vol.Secret.DefaultMode))
		if err != nil {
			return "", err
		}
		d := dir(pluginSecret)
		return d, writeAtomic(d, files)
	case vol.DownwardAPI != nil:
		files, err := b.downwardFiles(pod, vol.DownwardAPI.Items, mode(vol.DownwardAPI.DefaultMode))
		if err != nil {
			return "", err
		}
		d := dir(pluginDownwardAPI)
		return d, writeAtomic(d, files)
	case vol.Projected != nil:
		files := map[string]file{}
		def := mode(vol.Projected.DefaultMode)
		for _, src := range vol.Projected.Sources {
			var part map[string]file
			var err error
			switch {
			case src.ConfigMap != nil:
				part, err = b.configMapFiles(ctx, pod, src.ConfigMap, def)
			case src.Secret != nil:
				part, err = b.secretFiles(ctx, pod, src.Secret, def)
			case src.DownwardAPI != nil:
				part, err = b.downwardFiles(pod, src.DownwardAPI.Items, def)
			case src.ServiceAccountToken != nil:
				err = errors.New("serviceAccountToken projections are not supported by this agent")
			default:
				err = errors.New("unsupported projected volume source")
			}
			if err != nil {
				return "", err
			}
			for k, v := range part {
				files[k] = v
			}
		}
		d := dir(pluginProjected)
		return d, writeAtomic(d, files)
	}
	return "", errors.New("unsupported volume type: the agent mounts emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes")
}

func (b *Builder) hostPath(hp *v1.HostPathVolumeSource) error {
	t := v1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	switch t {
	case v1.HostPathDirectoryOrCreate:
		return os.MkdirAll(hp.Path, 0o755)
	case v1.HostPathDirectory:
		if fi, err := os.Stat(hp.Path); err != nil || !fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", hp.Path)
		}
	case v1.HostPathFile:
		if fi, err := os.Stat(hp.Path); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", hp.Path)
		}
	}
	return nil
}

// file is one file of a content volume.
type file struct {
	data []byte
	mode os.FileMode
}

func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m) & 0o777
}

func itemMode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m) & 0o777
}

func (b *Builder) configMapFiles(ctx context.Context, pod *v1.Pod, src *v1.ConfigMapProjection, def os.FileMode) (map[string]file, error) {
	optional := src.Optional != nil && *src.Optional
	cm, err := b.configMap(ctx, pod.Namespace, src.Name, map[string]*v1.ConfigMap{})
	if err != nil {
		if optional && apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	files, missing := project(data, src.Items, def)
	if missing != "" && !optional {
		return nil, fmt.Errorf("configmap references non-existent config key: %v", missing)
	}
	return files, nil
}

func (b *Builder) secretFiles(ctx context.Context, pod *v1.Pod, src *v1.SecretProjection, def os.FileMode) (map[string]file, error) {
	optional := src.Optional != nil && *src.Optional
	s, err := b.secret(ctx, pod.Namespace, src.Name, map[string]*v1.Secret{})
	if err != nil {
		if optional && apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	files, missing := project(s.Data, src.Items, def)
	if missing != "" && !optional {
		return nil, fmt.Errorf("references non-existent secret key: %v", missing)
	}
	return files, nil
}

// project is the files of data: every key, or only items (key → path,
// mode); missing is the first item key data lacks.
func project(data map[string][]byte, items []v1.KeyToPath, def os.FileMode) (files map[string]file, missing string) {
	files = map[string]file{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = file{v, def}
		}
		return files, ""
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if missing == "" {
				missing = it.Key
			}
			continue
		}
		files[it.Path] = file{v, itemMode(it.Mode, def)}
	}
	return files, missing
}

func (b *Builder) downwardFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, def os.FileMode) (map[string]file, error) {
	files := map[string]file{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = b.fieldValue(it.FieldRef.FieldPath, pod, true)
		case it.ResourceFieldRef != nil:
			c := &v1.Container{}
			for i := range pod.Spec.Containers {
				if pod.Spec.Containers[i].Name == it.ResourceFieldRef.ContainerName {
					c = &pod.Spec.Containers[i]
				}
			}
			v, err = b.resourceValue(it.ResourceFieldRef, pod, c)
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI item %s: %w", it.Path, err)
		}
		files[it.Path] = file{[]byte(v), itemMode(it.Mode, def)}
	}
	return files, nil
}

// writeAtomic makes dir hold exactly files, switching to the new content in
// one rename, as upstream's AtomicWriter: the files live in a timestamped
// directory that the symlink ..data points to, and each top-level name is a
// symlink through ..data, so a reader sees either the old or the new set.
func writeAtomic(dir string, files map[string]file) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for p := range files {
		if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			return fmt.Errorf("invalid path %q: must be relative and may not contain '..'", p)
		}
	}
	ts, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	for p, f := range files {
		full := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(full, f.mode); err != nil {
			return err
		}
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	top := map[string]bool{}
	for p := range files {
		top[strings.Split(filepath.ToSlash(filepath.Clean(p)), "/")[0]] = true
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "..") || top[n] {
			continue
		}
		os.Remove(filepath.Join(dir, n)) // a name the new content no longer has
	}
	names := make([]string, 0, len(top))
	for n := range top {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		link := filepath.Join(dir, n)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join("..data", n) {
			continue
		}
		os.Remove(link)
		if err := os.Symlink(filepath.Join("..data", n), link); err != nil {
			return err
		}
	}
	if old != "" && old != filepath.Base(ts) {
		os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}
