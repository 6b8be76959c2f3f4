package kite

import (
	"context"
	"io"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/apiextensions"
)

// crdInstaller serves the custom resources of Established CRDs through
// the resource set: one stack per served version, all over the same etcd
// keys (/registry/<group>/<plural>/...), JSON in the storage version as
// kube-apiserver stores them. It is the apiextensions loop's Installer.
type crdInstaller struct {
	ctx       context.Context // stacks run under it
	resources *resourceSet

	// mu guards served and orders installs.
	mu     sync.Mutex
	served map[string]*servedCRD // by CRD name
}

// servedCRD is what one CRD's resource is served as.
type servedCRD struct {
	uid     types.UID
	spec    apiextensionsv1.CustomResourceDefinitionSpec
	names   apiextensionsv1.CustomResourceDefinitionNames
	gvrs    []schema.GroupVersionResource
	storage *registry.Store
}

var _ apiextensions.Installer = (*crdInstaller)(nil)

func (c *crdInstaller) Install(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.served[crd.Name]; cur != nil {
		if cur.uid == crd.UID && apiequality.Semantic.DeepEqual(cur.spec, crd.Spec) && apiequality.Semantic.DeepEqual(cur.names, crd.Status.AcceptedNames) {
			return nil
		}
		c.uninstallLocked(crd.Name)
	}
	var storageVersion string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storageVersion = v.Name
		}
	}
	s := &servedCRD{uid: crd.UID, spec: *crd.Spec.DeepCopy(), names: *crd.Status.AcceptedNames.DeepCopy()}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		strat, err := apiextensions.CustomResourceStrategy(crd, v.Name)
		if err != nil {
			c.undo(s)
			return err
		}
		codec := versionCodec{
			Codec:    unstructured.UnstructuredJSONScheme,
			served:   schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name},
			storedAs: schema.GroupVersion{Group: crd.Spec.Group, Version: storageVersion},
		}
		st, err := c.resources.build.build(c.ctx, strat, stackOptions{Codec: codec})
		if err != nil {
			c.undo(s)
			return err
		}
		if err := c.resources.add(st); err != nil {
			st.stop()
			c.undo(s)
			return err
		}
		s.gvrs = append(s.gvrs, strat.GroupVersionResource())
		if v.Name == storageVersion {
			s.storage = st.store
		}
	}
	c.served[crd.Name] = s
	return nil
}

func (c *crdInstaller) undo(s *servedCRD) {
	for _, gvr := range s.gvrs {
		c.resources.remove(gvr)
	}
}

func (c *crdInstaller) Uninstall(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uninstallLocked(name)
	return nil
}

func (c *crdInstaller) uninstallLocked(name string) {
	if s := c.served[name]; s != nil {
		c.undo(s)
		delete(c.served, name)
	}
}

func (c *crdInstaller) Instances(name string) *registry.Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.served[name]; s != nil {
		return s.storage
	}
	return nil
}

// versionCodec stores custom resources in the storage version and reads
// them as the served version: with conversion None only apiVersion
// differs between versions, as upstream's nop converter rewrites it.
type versionCodec struct {
	runtime.Codec
	served, storedAs schema.GroupVersion
}

func (c versionCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := c.Codec.Decode(data, defaults, into)
	if err != nil {
		return obj, gvk, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && c.served != c.storedAs {
		u.SetAPIVersion(c.served.String())
	}
	return obj, gvk, nil
}

func (c versionCodec) Encode(obj runtime.Object, w io.Writer) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && c.served != c.storedAs {
		shallow := &unstructured.Unstructured{Object: make(map[string]any, len(u.Object))}
		for k, v := range u.Object {
			shallow.Object[k] = v
		}
		shallow.SetAPIVersion(c.storedAs.String())
		obj = shallow
	}
	return c.Codec.Encode(obj, w)
}
