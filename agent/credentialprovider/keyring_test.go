package credentialprovider

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases of upstream's TestURLsMatch.
func TestURLsMatchGlobsPartsPortsAndPaths(t *testing.T) {
	for _, tc := range []struct {
		glob, target string
		want         bool
	}{
		{"*.kubernetes.io", "prefix.kubernetes.io", true},
		{"prefix.*.io", "prefix.kubernetes.io", true},
		{"prefix.kubernetes.*", "prefix.kubernetes.io", true},
		{"*-good.kubernetes.io", "prefix-good.kubernetes.io", true},
		{"*.kubernetes.io/blah", "prefix.kubernetes.io/blah", true},
		{"prefix.*.io/foo", "prefix.kubernetes.io/foo/bar", true},
		{"*.kubernetes.io:1111/blah", "prefix.kubernetes.io:1111/blah", true},
		{"prefix.*.io:1111/foo", "prefix.kubernetes.io:1111/foo/bar", true},
		{"*.kubernetes.io", "kubernetes.io", false},
		{"*.*.kubernetes.io", "prefix.kubernetes.io", false},
		{"*.*.kubernetes.io", "kubernetes.io", false},
		{"*kubernetes.io", "a.kubernetes.io", false},
		{"*kubernetes.io", "kubernetes.io", true},
		{"*.*.*.kubernetes.io", "a.b.c.kubernetes.io", true},
		{"kubernetes.io", "kubernetes.com", false},
		{"k*.io", "quay.io", false},
		{"*.kubernetes.io:1234/blah", "prefix.kubernetes.io:1111/blah", false},
		{"prefix.*.io/foo", "prefix.kubernetes.io:1111/foo/bar", false},
		{"127.0.0.1:5000", "127.0.0.1:5000/kite/agnhost", true},
		{"127.0.0.1", "127.0.0.1:5000/kite/agnhost", false},
		{"127.0.0.1:5001", "127.0.0.1:5000/kite/agnhost", false},
	} {
		got, _ := URLsMatchStr(tc.glob, tc.target)
		if got != tc.want {
			t.Errorf("URLsMatchStr(%q, %q) = %t, want %t", tc.glob, tc.target, got, tc.want)
		}
	}
}

// A key with a scheme and a /v1/ or /v2/ path (as docker login writes
// them) matches the host's images, globs included (upstream's
// TestDockerKeyringForGlob and TestIssue3797).
func TestKeyringKeysWithSchemeAndAPIPathMatchTheHost(t *testing.T) {
	for _, tc := range []struct{ key, image string }{
		{"https://hello.kubernetes.io", "hello.kubernetes.io"},
		{"https://*.docker.io", "prefix.docker.io"},
		{"https://prefix.*.io/path", "prefix.docker.io/path/subpath"},
		{"https://*.docker.io:8888", "prefix.docker.io:8888"},
		{"https://*.docker.io/v1/", "prefix.docker.io/path:1111"},
		{"https://*.docker.io/v2/", "prefix.docker.io/path:1111"},
		{"http://127.0.0.1:5000", "127.0.0.1:5000/a/b"},
		{"https://quay.io/v1/", "quay.io/foo/bar"},
	} {
		var k Keyring
		k.Add(DockerConfig{tc.key: {Username: "u", Password: "p"}})
		got, ok := k.Lookup(tc.image)
		if !ok || len(got) != 1 || got[0].Username != "u" {
			t.Errorf("key %q, image %q: got %v, %t; want the credentials", tc.key, tc.image, got, ok)
		}
	}
}

// Upstream's TestDockerKeyringLookup: the most specific key first, a
// path key matches as a prefix of the image's path, no host match is none.
func TestKeyringLookupMostSpecificFirst(t *testing.T) {
	ada := AuthConfig{Username: "ada", Password: "smash", Email: "ada@example.com"}
	grace := AuthConfig{Username: "grace", Password: "squash", Email: "grace@example.com"}
	var k Keyring
	k.Add(DockerConfig{
		"bar.example.com/pong": {Username: grace.Username, Password: grace.Password, Email: grace.Email},
		"bar.example.com":      {Username: ada.Username, Password: ada.Password, Email: ada.Email},
	})
	for _, tc := range []struct {
		image string
		want  []AuthConfig
	}{
		{"bar.example.com", []AuthConfig{ada}},
		{"bar.example.com/pong", []AuthConfig{grace, ada}},
		{"bar.example.com/ping", []AuthConfig{ada}},
		{"bar.example.com/pongz", []AuthConfig{grace, ada}},
		{"bar.example.com/pong/pang", []AuthConfig{grace, ada}},
		{"example.com", nil},
		{"foo.example.com", nil},
	} {
		got, ok := k.Lookup(tc.image)
		if ok != (len(tc.want) > 0) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Lookup(%q) = %v, %t; want %v", tc.image, got, ok, tc.want)
		}
	}
}

// docker.io's images find credentials stored for index.docker.io
// (upstream's TestKeyringHitWith*DockerHub, TestIsDefaultRegistryMatch).
func TestKeyringDockerHubCredentials(t *testing.T) {
	var k Keyring
	k.Add(DockerConfig{"https://index.docker.io/v1/": {Username: "hub", Password: "p"}})
	for _, tc := range []struct {
		image string
		want  bool
	}{
		{"docker.io/library/nginx", true},
		{"docker.io/foo/bar", true},
		{"index.docker.io/foo/bar", true},
		{"foo/bar", true},
		{"registry.tld/foo/bar", false},
		{"registry:5000/foo/bar", false},
		{"myhostdocker.io/foo/bar", false},
	} {
		if _, ok := k.Lookup(tc.image); ok != tc.want {
			t.Errorf("Lookup(%q) found credentials: %t, want %t", tc.image, ok, tc.want)
		}
	}
}

func TestRepositoryNormalizesAsTheKubelet(t *testing.T) {
	for _, tc := range []struct{ image, want string }{
		{"nginx", "docker.io/library/nginx"},
		{"nginx:1.27", "docker.io/library/nginx"},
		{"foo/bar:1", "docker.io/foo/bar"},
		{"index.docker.io/foo/bar", "docker.io/foo/bar"},
		{"registry.k8s.io/e2e-test-images/agnhost:2.66.1", "registry.k8s.io/e2e-test-images/agnhost"},
		{"127.0.0.1:5000/kite/busybox:1", "127.0.0.1:5000/kite/busybox"},
		{"127.0.0.1:5000/kite/busybox", "127.0.0.1:5000/kite/busybox"},
		{"localhost/busybox@sha256:" + strings.Repeat("a", 64), "localhost/busybox"},
		{"quay.io/a/b:c@sha256:" + strings.Repeat("a", 64), "quay.io/a/b"},
	} {
		if got := Repository(tc.image); got != tc.want {
			t.Errorf("Repository(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}

func TestFromSecretsReadsBothDockerSecretTypes(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("alice:s3cret:with-colon"))
	unpadded := strings.TrimRight(base64.StdEncoding.EncodeToString([]byte("bob:pw")), "=")
	secret := func(name string, typ v1.SecretType, key, data string) v1.Secret {
		return v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Type: typ, Data: map[string][]byte{key: []byte(data)}}
	}
	for _, tc := range []struct {
		name    string
		secrets []v1.Secret
		image   string
		want    []AuthConfig
		nilRing bool
		wantErr string
	}{
		{name: "dockerconfigjson with auth", image: "127.0.0.1:5000/a",
			secrets: []v1.Secret{secret("s", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"127.0.0.1:5000":{"auth":"`+auth+`"}}}`)},
			want:    []AuthConfig{{Username: "alice", Password: "s3cret:with-colon"}}},
		{name: "dockercfg with username and password", image: "reg.example.com/x/y",
			secrets: []v1.Secret{secret("s", v1.SecretTypeDockercfg, v1.DockerConfigKey, `{"https://reg.example.com":{"username":"u","password":"p","email":"e"}}`)},
			want:    []AuthConfig{{Username: "u", Password: "p", Email: "e"}}},
		{name: "unpadded auth", image: "reg.example.com/x",
			secrets: []v1.Secret{secret("s", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"reg.example.com":{"auth":"`+unpadded+`"}}}`)},
			want:    []AuthConfig{{Username: "bob", Password: "pw"}}},
		{name: "two secrets for one host: both, in order", image: "reg.example.com/x",
			secrets: []v1.Secret{
				secret("a", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"reg.example.com":{"username":"1","password":"p"}}}`),
				secret("b", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"reg.example.com":{"username":"2","password":"p"}}}`)},
			want: []AuthConfig{{Username: "1", Password: "p"}, {Username: "2", Password: "p"}}},
		{name: "a key under the wrong type is ignored", image: "reg.example.com/x", nilRing: true,
			secrets: []v1.Secret{secret("s", v1.SecretTypeOpaque, v1.DockerConfigJsonKey, `{"auths":{"reg.example.com":{"username":"u"}}}`)}},
		{name: "no secrets", nilRing: true},
		{name: "bad JSON names the secret", wantErr: "secret ns/bad",
			secrets: []v1.Secret{secret("bad", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{`)}},
		{name: "bad auth field", wantErr: "secret ns/bad",
			secrets: []v1.Secret{secret("bad", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":{"r":{"auth":"`+base64.StdEncoding.EncodeToString([]byte("nocolon"))+`"}}}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := FromSecrets(tc.secrets)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.nilRing {
				if k != nil {
					t.Fatalf("keyring %+v, want none", k)
				}
				return
			}
			got, ok := k.Lookup(Repository(tc.image))
			if !ok || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Lookup = %+v, %t; want %+v", got, ok, tc.want)
			}
		})
	}
}
