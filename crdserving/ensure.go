package crdserving

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kite-project/kite/registry"
)

// ReadFiles reads the CustomResourceDefinitions in files and
// directories of YAML or JSON (a directory's *.yaml, *.yml and *.json, not
// its subdirectories), several documents a file, as operator projects keep
// them. Documents of other kinds (a kustomization.yaml beside them) are
// skipped, as envtest skips them; a document that does not parse is an
// error naming its file.
func ReadFiles(scheme *runtime.Scheme, paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("CRD path: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("CRD directory: %w", err)
		}
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
		}
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("CRD file: %w", err)
		}
		docs := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for i := 0; ; i++ {
			var raw runtime.RawExtension
			if err := docs.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("CRD file %s, document %d: %w", f, i+1, err)
			}
			if len(bytes.TrimSpace(raw.Raw)) == 0 || !bytes.Contains(raw.Raw, []byte("CustomResourceDefinition")) {
				continue
			}
			obj, gvk, err := decoder.Decode(raw.Raw, nil, nil)
			if err != nil {
				if runtime.IsMissingKind(err) || runtime.IsNotRegisteredError(err) {
					continue
				}
				return nil, fmt.Errorf("CRD file %s, document %d: %w", f, i+1, err)
			}
			crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
			if !ok {
				if gvk.Kind == "CustomResourceDefinition" {
					return nil, fmt.Errorf("CRD file %s, document %d: %s is not served; use apiextensions.k8s.io/v1", f, i+1, gvk.GroupVersion())
				}
				continue
			}
			out = append(out, crd)
		}
	}
	return out, nil
}

// Ensure creates (or, on a data directory that has them, updates)
// crds and waits until each is Established and its resource served, so
// that discovery on the returned config already lists them. A CRD the
// API refuses is an error with the API's message. The CRDs are written a
// few at a time: most of a write is the CRD's validation (its schema, its
// CEL rules compiled to check them), and the CRD controller establishes
// the first ones while the last are written.
func (s *Serving) Ensure(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if len(crds) == 0 {
		return nil
	}
	store := s.resources.Store("customresourcedefinitions.apiextensions.k8s.io")
	written := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, crd := range crds {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			written[i], errs[i] = writeCRD(ctx, store, crd)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("install CRD %s: %w", crds[i].Name, err)
		}
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		var waiting []string
		for _, crd := range written {
			if !s.installer.serves(crd) {
				waiting = append(waiting, crd.Name)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			slices.Sort(waiting)
			return fmt.Errorf("CRDs not established: %s: %w", strings.Join(waiting, ", "), ctx.Err())
		case <-t.C:
		}
	}
}

// writeCRD creates crd, or updates the one of its name to its spec,
// labels and annotations, and returns what it wrote.
func writeCRD(ctx context.Context, store *registry.Store, crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd = crd.DeepCopy()
	crd.ResourceVersion = ""
	out, err := store.Create(ctx, "", crd, &metav1.CreateOptions{FieldManager: "kite"})
	if apierrors.IsAlreadyExists(err) {
		out, _, err = store.Update(ctx, &registry.UpdateRequest{
			Name:    crd.Name,
			Options: metav1.UpdateOptions{FieldManager: "kite"},
			Object: func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
				c := cur.(*apiextensionsv1.CustomResourceDefinition)
				c.Spec = crd.Spec
				c.Labels, c.Annotations = crd.Labels, crd.Annotations
				return c, nil
			},
		})
	}
	if err != nil {
		return nil, err
	}
	return out.(*apiextensionsv1.CustomResourceDefinition), nil
}
