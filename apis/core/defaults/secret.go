package defaults

import (
	corev1 "k8s.io/api/core/v1"
)

// Secret applies upstream's secret defaults: type Opaque when empty. It
// also does what upstream's v1->internal conversion does with stringData:
// each entry overwrites the data key of the same name and stringData is
// dropped, since it is write-only and never stored or shown.
func Secret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

// ConfigMap applies upstream's SetDefaults_ConfigMap: data is an empty map
// rather than nil (invisible in JSON, but it makes update comparisons
// between a stored object and a fresh one agree).
func ConfigMap(cm *corev1.ConfigMap) {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
}
