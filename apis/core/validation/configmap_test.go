package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

var meta = metav1.ObjectMeta{Name: "cfg", Namespace: "default"}

func TestValidateConfigMap(t *testing.T) {
	cases := []struct {
		name string
		cm   corev1.ConfigMap
		want []want
	}{
		{"valid", corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"app.conf": "x"}, BinaryData: map[string][]byte{"logo.png": {1}}}, nil},
		{"bad key", corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a/b": "x"}},
			[]want{{field.ErrorTypeInvalid, "data[a/b]"}}},
		{"key in both data and binaryData", corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "x"}, BinaryData: map[string][]byte{"k": {1}}},
			[]want{{field.ErrorTypeInvalid, "data[k]"}}},
		{"bad binary key", corev1.ConfigMap{ObjectMeta: meta, BinaryData: map[string][]byte{"..": {1}}},
			[]want{{field.ErrorTypeInvalid, "binaryData[..]"}}},
		{"over 1 MiB in total", corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{
			"a": strings.Repeat("x", MaxSecretSize/2), "b": strings.Repeat("x", MaxSecretSize/2+1)}},
			[]want{{field.ErrorTypeTooLong, "[]"}}},
		{"exactly 1 MiB", corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": strings.Repeat("x", MaxSecretSize)}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateConfigMap(&tc.cm), tc.want...)
		})
	}
}

func TestValidateConfigMapUpdate(t *testing.T) {
	m := meta
	m.ResourceVersion = "1"
	old := corev1.ConfigMap{ObjectMeta: m, Data: map[string]string{"a": "1"}, Immutable: ptr.To(true)}
	cases := []struct {
		name   string
		mutate func(*corev1.ConfigMap)
		want   []want
	}{
		{"labels of an immutable config map may change", func(c *corev1.ConfigMap) { c.Labels = map[string]string{"a": "b"} }, nil},
		{"data of an immutable config map may not", func(c *corev1.ConfigMap) { c.Data["a"] = "2" },
			[]want{{field.ErrorTypeForbidden, "data"}}},
		{"immutable may not be unset", func(c *corev1.ConfigMap) { c.Immutable = nil },
			[]want{{field.ErrorTypeForbidden, "immutable"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm := old.DeepCopy()
			tc.mutate(cm)
			checkErrors(t, ValidateConfigMapUpdate(cm, &old), tc.want...)
		})
	}
}

func TestValidateSecret(t *testing.T) {
	cases := []struct {
		name   string
		secret corev1.Secret
		want   []want
	}{
		{"valid opaque", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("x")}}, nil},
		{"bad key", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a b": nil}},
			[]want{{field.ErrorTypeInvalid, "data[a b]"}}},
		{"over 1 MiB", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": make([]byte, MaxSecretSize+1)}},
			[]want{{field.ErrorTypeTooLong, "data"}}},
		{"tls needs cert and key", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS},
			[]want{{field.ErrorTypeRequired, "data[tls.crt]"}, {field.ErrorTypeRequired, "data[tls.key]"}}},
		{"dockerconfigjson must be JSON", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{")}},
			[]want{{field.ErrorTypeInvalid, "data[.dockerconfigjson]"}}},
		{"dockerconfigjson required", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeDockerConfigJson},
			[]want{{field.ErrorTypeRequired, "data[.dockerconfigjson]"}}},
		{"basic auth needs username or password", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeBasicAuth},
			[]want{{field.ErrorTypeRequired, "data[username]"}, {field.ErrorTypeRequired, "data[password]"}}},
		{"basic auth with password only", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"password": nil}}, nil},
		{"ssh auth needs private key", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeSSHAuth},
			[]want{{field.ErrorTypeRequired, "data[ssh-privatekey]"}}},
		{"service account token needs account name", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeServiceAccountToken},
			[]want{{field.ErrorTypeRequired, "metadata.annotations[kubernetes.io/service-account.name]"}}},
		{"custom type free-form", corev1.Secret{ObjectMeta: meta, Type: "example.com/mine"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateSecret(&tc.secret), tc.want...)
		})
	}
}

func TestValidateSecretUpdate(t *testing.T) {
	m := meta
	m.ResourceVersion = "1"
	old := corev1.Secret{ObjectMeta: m, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("1")}, Immutable: ptr.To(true)}
	cases := []struct {
		name   string
		mutate func(*corev1.Secret)
		want   []want
	}{
		{"type is immutable", func(s *corev1.Secret) { s.Type = "example.com/other" },
			[]want{{field.ErrorTypeInvalid, "type"}}},
		{"data of an immutable secret may not change", func(s *corev1.Secret) { s.Data["a"] = []byte("2") },
			[]want{{field.ErrorTypeForbidden, "data"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := old.DeepCopy()
			tc.mutate(s)
			checkErrors(t, ValidateSecretUpdate(s, &old), tc.want...)
		})
	}
}

func TestValidateServiceAccount(t *testing.T) {
	cases := []struct {
		name string
		sa   corev1.ServiceAccount
		want []want
	}{
		{"valid", corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "default"}}, nil},
		{"bad name", corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "Builder", Namespace: "default"}},
			[]want{{field.ErrorTypeInvalid, "metadata.name"}}},
		{"namespace required", corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}},
			[]want{{field.ErrorTypeRequired, "metadata.namespace"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateServiceAccount(&tc.sa), tc.want...)
		})
	}
}
