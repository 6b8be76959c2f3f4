package cri

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/runtime/containerd"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// registry is a read-only OCI distribution registry on 127.0.0.1 with
// basic authentication: each repository serves the image of an OCI layout
// archive of scripts/images (by any tag or by its manifest's digest), a
// repository it was not given the one of "".
type registry struct {
	host           string
	user, password string
	manifests      map[string]string // repository: its manifest's digest
	blobs          map[string][]byte
	// authorized counts the requests that carried the right credentials.
	authorized atomic.Int64
}

// startRegistry serves archives (repository: file) on a free port until
// the test ends, and tells the package's containerd to reach it over
// plain HTTP.
func startRegistry(t *testing.T, user, password string, archives map[string]string) *registry {
	t.Helper()
	r := &registry{user: user, password: password, blobs: map[string][]byte{}, manifests: map[string]string{}}
	for repo, archive := range archives {
		r.manifests[repo] = r.load(t, archive)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.host = l.Addr().String()
	srv := &http.Server{Handler: r}
	go srv.Serve(l) // ends with Close below
	t.Cleanup(func() { srv.Close() })
	if err := containerd.AddPlainHTTPRegistry(filepath.Join(critest.Dir(), "containerd"), r.host); err != nil {
		t.Fatal(err)
	}
	return r
}

// variant serves under repo an image of its own: base's (a repository
// served already) with the label kite.test=repo in its configuration, so
// that its image ID differs from every other's (containerd removes an
// image by ID with all its names).
func (r *registry) variant(t *testing.T, repo, base string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.blobs[r.manifests[base]], &m); err != nil {
		t.Fatal(err)
	}
	cfgDesc := m["config"].(map[string]any)
	var cfg map[string]any
	if err := json.Unmarshal(r.blobs[cfgDesc["digest"].(string)], &cfg); err != nil {
		t.Fatal(err)
	}
	inner, _ := cfg["config"].(map[string]any)
	if inner == nil {
		inner = map[string]any{}
	}
	inner["Labels"] = map[string]string{"kite.test": repo}
	cfg["config"] = inner
	put := func(v any) (string, int) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		d := fmt.Sprintf("sha256:%x", sha256.Sum256(b))
		r.blobs[d] = b
		return d, len(b)
	}
	cfgDesc["digest"], cfgDesc["size"] = put(cfg)
	r.manifests[repo], _ = put(m)
}

// load reads an OCI layout archive's blobs and returns its manifest's
// digest.
func (r *registry) load(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var index []byte
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch name := strings.TrimPrefix(h.Name, "./"); {
		case name == "index.json":
			index = b
		case strings.HasPrefix(name, "blobs/sha256/"):
			r.blobs["sha256:"+strings.TrimPrefix(name, "blobs/sha256/")] = b
		}
	}
	var idx struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	if err := json.Unmarshal(index, &idx); err != nil || len(idx.Manifests) == 0 {
		t.Fatalf("%s: index.json %q: %v", archive, index, err)
	}
	return idx.Manifests[0].Digest
}

// ServeHTTP answers /v2/ (the version check), manifests and blobs, each
// only with the registry's credentials: without them 401 with a Basic
// challenge, as a registry with basic authentication answers.
func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.password {
		w.Header().Set("WWW-Authenticate", `Basic realm="kite-test"`)
		writeRegistryError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
		return
	}
	r.authorized.Add(1)
	path := strings.TrimPrefix(req.URL.Path, "/v2/")
	if path == "" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
		return
	}
	var digest, mediaType string
	if i := strings.LastIndex(path, "/manifests/"); i >= 0 {
		ref := path[i+len("/manifests/"):]
		manifest, ok := r.manifests[path[:i]]
		if !ok {
			manifest = r.manifests[""]
		}
		if strings.HasPrefix(ref, "sha256:") && ref != manifest {
			writeRegistryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
			return
		}
		digest, mediaType = manifest, "application/vnd.oci.image.manifest.v1+json"
	} else if i := strings.LastIndex(path, "/blobs/"); i >= 0 {
		digest, mediaType = path[i+len("/blobs/"):], "application/octet-stream"
	}
	b, ok := r.blobs[digest]
	if !ok {
		writeRegistryError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown")
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if req.Method != http.MethodHead {
		w.Write(b)
	}
}

func writeRegistryError(w http.ResponseWriter, code int, errCode, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"errors":[{"code":%q,"message":%q}]}`, errCode, msg)
}

// TestImagePullSecretsAuthenticateThePull: a registry on 127.0.0.1 with
// basic authentication. A pod whose imagePullSecrets hold its credentials
// (docker config JSON) runs its image; one whose ServiceAccount names a
// .dockercfg secret for 127.0.0.*:<port> (a glob) runs too, the
// ServiceAccount admission having copied the secret into the pod; one
// without credentials is ErrImagePull with the runtime's error as the
// message, as the kubelet reports it, and the registry saw no
// authorized request for its image.
func TestImagePullSecretsAuthenticateThePull(t *testing.T) {
	critest.Runtime(t)
	reg := startRegistry(t, "kite", "s3cret", map[string]string{"": testArchive(t, "busybox")})
	a := startAgent(t, "cri-pullsecrets", t.TempDir())
	ctx := context.Background()

	auth := base64.StdEncoding.EncodeToString([]byte(reg.user + ":" + reg.password))
	sleep := func(image string, mutate func(*v1.Pod)) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers[0].Image = image
			p.Spec.Containers[0].Args = []string{"sleep", "3600"}
			p.Spec.Containers[0].ImagePullPolicy = v1.PullAlways
			if mutate != nil {
				mutate(p)
			}
		}
	}
	none := a.pod(t, "anonymous", sleep(reg.host+"/kite/none:1", nil))
	ns := none.Namespace
	if _, err := a.cs.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{"http://%s":{"auth":%q}}}`, reg.host, auth))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(reg.host)
	if _, err := a.cs.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dockercfg"}, Type: v1.SecretTypeDockercfg,
		Data: map[string][]byte{v1.DockerConfigKey: []byte(fmt.Sprintf(`{"127.0.0.*:%s":{"username":%q,"password":%q}}`, port, reg.user, reg.password))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	no := false
	if _, err := a.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "puller"},
		AutomountServiceAccountToken: &no, ImagePullSecrets: []v1.LocalObjectReference{{Name: "dockercfg"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withSecret := a.pod(t, "with-secret", sleep(reg.host+"/kite/secret:1", func(p *v1.Pod) {
		p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "missing"}, {Name: "regcred"}}
	}))
	fromSA := a.pod(t, "from-serviceaccount", sleep(reg.host+"/kite/sa:1", func(p *v1.Pod) { p.Spec.ServiceAccountName = "puller" }))

	a.wait(t, withSecret, "Running", running)
	a.waitEvent(t, withSecret, "FailedToRetrieveImagePullSecret", "Unable to retrieve some image pull secrets (missing); attempting to pull the image may not succeed.")
	a.waitEvent(t, withSecret, "Pulled", fmt.Sprintf("Successfully pulled image %q", reg.host+"/kite/secret:1"))
	a.wait(t, fromSA, "Running", running)

	got := a.wait(t, none, "ErrImagePull", waiting("ErrImagePull"))
	msg := got.Status.ContainerStatuses[0].State.Waiting.Message
	if !strings.HasPrefix(msg, "rpc error: code = ") || !strings.Contains(msg, reg.host+"/kite/none:1") || !strings.Contains(msg, "401 Unauthorized") {
		t.Errorf("ErrImagePull message = %q, want the runtime's error: the image, 401 Unauthorized", msg)
	}
	a.waitEvent(t, none, "Failed", fmt.Sprintf("Failed to pull image %q: rpc error: code = ", reg.host+"/kite/none:1"))
}

// testArchive is the archive of scripts/images named name (critest built
// them).
func testArchive(t *testing.T, name string) string {
	return filepath.Join(repoRootDir(t), ".cache", "images", name+".tar")
}

// repoRootDir is the repository's root (go.mod beside scripts/images).
func repoRootDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "images")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no repository root above the working directory")
		}
		dir = parent
	}
}
