// Command registry is a read-only OCI distribution registry over the image
// archives of scripts/images (OCI layouts), for machines that reach no
// registry: scripts/conformance runs it as a mirror of registry.k8s.io in
// each node's containerd (a hosts.toml), so that a pull, which pull policy
// Always asks for even of an image that is present, resolves the image's
// name to the manifest that was imported and finds its blobs there, as a
// real registry would answer.
//
//	registry -listen ADDR ARCHIVE...
//
// Each archive's index.json names its images (the
// io.containerd.image.name annotation, registry/repository:tag); a
// manifest is served by repository and tag or by digest, a blob by digest
// (read from its archive at each request, nothing held in memory). It
// serves GET and HEAD only, without authentication, and logs each request
// that it cannot answer.
package main

import (
	"archive/tar"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
)

// blob is where a blob is: its archive, offset and size.
type blob struct {
	archive      string
	offset, size int64
}

type manifest struct{ digest, mediaType string }

type registry struct {
	blobs     map[string]blob     // digest: where
	manifests map[string]manifest // repository:tag: its manifest
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	r := &registry{blobs: map[string]blob{}, manifests: map[string]manifest{}}
	for _, a := range flag.Args() {
		if err := r.load(a); err != nil {
			log.Fatalf("registry: %s: %v", a, err)
		}
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("registry: %v", err)
	}
	// The address, for the script that started it.
	fmt.Println(l.Addr().String())
	log.Printf("registry: %d images, %d blobs on %s", len(r.manifests), len(r.blobs), l.Addr())
	log.Fatal(http.Serve(l, r))
}

// load indexes an archive's blobs and the names of its images.
func (r *registry) load(archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
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
			return err
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch {
		case name == "index.json":
			if index, err = io.ReadAll(tr); err != nil {
				return err
			}
		case strings.HasPrefix(name, "blobs/sha256/") && h.Typeflag == tar.TypeReg:
			// An uncompressed tar: the entry's data starts where the
			// reader stands after its header.
			off, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				return err
			}
			r.blobs["sha256:"+strings.TrimPrefix(name, "blobs/sha256/")] = blob{archive, off, h.Size}
		}
	}
	var idx struct {
		Manifests []struct {
			MediaType   string            `json:"mediaType"`
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	for _, m := range idx.Manifests {
		ref := m.Annotations["io.containerd.image.name"]
		// registry/repository:tag; the registry is the mirror's question.
		i := strings.Index(ref, "/")
		if i < 0 || !strings.Contains(ref[i:], ":") {
			continue
		}
		r.manifests[ref[i+1:]] = manifest{m.Digest, m.MediaType}
	}
	return nil
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "read-only registry")
		return
	}
	path := strings.TrimPrefix(req.URL.Path, "/v2/")
	if path == "" || path == "/v2" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
		return
	}
	var digest, mediaType string
	if i := strings.LastIndex(path, "/manifests/"); i >= 0 {
		repo, ref := path[:i], path[i+len("/manifests/"):]
		if strings.HasPrefix(ref, "sha256:") {
			for _, m := range r.manifests {
				if m.digest == ref {
					digest, mediaType = m.digest, m.mediaType
				}
			}
		} else if m, ok := r.manifests[repo+":"+ref]; ok {
			digest, mediaType = m.digest, m.mediaType
		}
		if digest == "" {
			log.Printf("registry: no manifest %s", path)
			writeError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
			return
		}
	} else if i := strings.LastIndex(path, "/blobs/"); i >= 0 {
		digest, mediaType = path[i+len("/blobs/"):], "application/octet-stream"
	}
	b, ok := r.blobs[digest]
	if !ok {
		log.Printf("registry: no blob %s", path)
		writeError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown")
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Content-Length", fmt.Sprint(b.size))
	if req.Method == http.MethodHead {
		return
	}
	f, err := os.Open(b.archive)
	if err != nil {
		log.Printf("registry: %v", err)
		return
	}
	defer f.Close()
	io.Copy(w, io.NewSectionReader(f, b.offset, b.size))
}

func writeError(w http.ResponseWriter, code int, errCode, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"errors":[{"code":%q,"message":%q}]}`, errCode, msg)
}
