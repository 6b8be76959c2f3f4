package containerconfig

import (
	"errors"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Volume plugin directory names, as upstream's (kubernetes.io~<plugin>),
// under <root>/pods/<uid>/volumes.
const (
	PluginEmptyDir    = "kubernetes.io~empty-dir"
	PluginConfigMap   = "kubernetes.io~configmap"
	PluginSecret      = "kubernetes.io~secret"
	PluginDownwardAPI = "kubernetes.io~downward-api"
	PluginProjected   = "kubernetes.io~projected"
)

// ErrUnsupportedVolume is wrapped by the error of a volume the agent
// cannot set up.
var ErrUnsupportedVolume = errors.New("unsupported volume type: the agent mounts emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes")

// Plugin is the plugin directory of a volume the agent makes under the
// pod's directory; "" for a hostPath volume (it is where it is) and for a
// volume type the agent does not support.
func Plugin(vol *v1.Volume) string {
	switch {
	case vol.EmptyDir != nil:
		return PluginEmptyDir
	case vol.ConfigMap != nil:
		return PluginConfigMap
	case vol.Secret != nil:
		return PluginSecret
	case vol.DownwardAPI != nil:
		return PluginDownwardAPI
	case vol.Projected != nil:
		return PluginProjected
	}
	return ""
}

// Files is the content of a configMap, secret, downwardAPI or projected
// volume: file path (relative to the volume) → content and mode, with
// upstream's default mode 0644 and modes of items, and upstream's errors
// for what is missing and not optional. Other volumes have no content (nil).
func Files(pod *v1.Pod, vol *v1.Volume, in Inputs) (map[string]File, error) {
	switch {
	case vol.ConfigMap != nil:
		return configMapFiles(&v1.ConfigMapProjection{LocalObjectReference: vol.ConfigMap.LocalObjectReference, Items: vol.ConfigMap.Items, Optional: vol.ConfigMap.Optional}, mode(vol.ConfigMap.DefaultMode), in)
	case vol.Secret != nil:
		return secretFiles(&v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: vol.Secret.SecretName}, Items: vol.Secret.Items, Optional: vol.Secret.Optional}, mode(vol.Secret.DefaultMode), in)
	case vol.DownwardAPI != nil:
		return downwardFiles(pod, vol.DownwardAPI.Items, mode(vol.DownwardAPI.DefaultMode), in)
	case vol.Projected != nil:
		files := map[string]File{}
		def := mode(vol.Projected.DefaultMode)
		for _, src := range vol.Projected.Sources {
			var part map[string]File
			var err error
			switch {
			case src.ConfigMap != nil:
				part, err = configMapFiles(src.ConfigMap, def, in)
			case src.Secret != nil:
				part, err = secretFiles(src.Secret, def, in)
			case src.DownwardAPI != nil:
				part, err = downwardFiles(pod, src.DownwardAPI.Items, def, in)
			case src.ServiceAccountToken != nil:
				if in.ServiceAccountToken == nil {
					err = errors.New("serviceAccountToken projections need an API client")
					break
				}
				var tok []byte
				if tok, err = in.ServiceAccountToken(src.ServiceAccountToken); err == nil {
					part = map[string]File{src.ServiceAccountToken.Path: {Data: tok, Mode: def}}
				}
			default:
				err = errors.New("unsupported projected volume source")
			}
			if err != nil {
				return nil, err
			}
			for k, v := range part {
				files[k] = v
			}
		}
		return files, nil
	}
	return nil, nil
}

// File is one file of a content volume.
type File struct {
	Data []byte
	Mode os.FileMode
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

func configMapFiles(src *v1.ConfigMapProjection, def os.FileMode, in Inputs) (map[string]File, error) {
	optional := src.Optional != nil && *src.Optional
	cm, err := in.configMap(src.Name)
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

func secretFiles(src *v1.SecretProjection, def os.FileMode, in Inputs) (map[string]File, error) {
	optional := src.Optional != nil && *src.Optional
	s, err := in.secret(src.Name)
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
func project(data map[string][]byte, items []v1.KeyToPath, def os.FileMode) (files map[string]File, missing string) {
	files = map[string]File{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = File{v, def}
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
		files[it.Path] = File{v, itemMode(it.Mode, def)}
	}
	return files, missing
}

func downwardFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, def os.FileMode, in Inputs) (map[string]File, error) {
	files := map[string]File{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = fieldValue(it.FieldRef.FieldPath, pod, in.HostIPs, in.podIPs(pod), true)
		case it.ResourceFieldRef != nil:
			c := &v1.Container{}
			for i := range pod.Spec.Containers {
				if pod.Spec.Containers[i].Name == it.ResourceFieldRef.ContainerName {
					c = &pod.Spec.Containers[i]
				}
			}
			v, err = resourceValue(it.ResourceFieldRef, pod, c, in.Allocatable)
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI item %s: %w", it.Path, err)
		}
		files[it.Path] = File{[]byte(v), itemMode(it.Mode, def)}
	}
	return files, nil
}
