// Package layers_test holds the import rules of docs/README.md ("Layers")
// as a test: a package of a lower layer that imports one of a higher layer
// fails it, and so does a package that belongs to no layer (add it to
// layerOf and to docs/README.md).
package layers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kite-project/kite"

// layer is where a package stands; a higher rank may import a lower one.
type layer struct {
	name string
	rank int
	// client packages (controllers, agents, load generators) talk to the
	// API over HTTP: they import the base and their own tree only.
	client bool
}

var (
	base      = layer{"base", 0, false}
	storage   = layer{"storage", 1, false}
	registry  = layer{"registry", 2, false}
	apiserver = layer{"apiserver", 3, false}
	clients   = layer{"clients", 4, true}
	serving   = layer{"serving", 5, false}
	root      = layer{"root", 6, false}
	tools     = layer{"tools", 7, false}
)

// layerOf places a package, by its path inside the module ("" is the
// root), or reports that it has no place.
func layerOf(rel string) (layer, bool) {
	// The chaos harness drives whole processes and reads etcd behind them to
	// check that nothing was lost: a tool, although it lives beside the
	// workloads it runs.
	if rel == "workload/chaos" || strings.HasPrefix(rel, "workload/chaos/") {
		return tools, true
	}
	top, _, _ := strings.Cut(rel, "/")
	switch top {
	case "apis", "version", "pki", "kubeconfig", "batchconn", "listwatch", "eventwriter":
		return base, true
	case "storage":
		return storage, true
	case "registry":
		return registry, true
	case "apiserver":
		return apiserver, true
	case "controllers", "agent", "workload":
		return clients, true
	case "resourceset", "crdserving":
		return serving, true
	case "":
		return root, true
	case "cmd", "kitetest", "test", "scripts":
		return tools, true
	}
	return layer{}, false
}

// violations returns the imports that break the rules, one line each, for
// packages given as their module-relative paths and the module-relative
// paths of everything they depend on (go list's Deps: direct or not).
//   - A package depends on no package of a higher layer.
//   - A client depends only on the base and its own tree (agent/...,
//     controllers/..., workload/...): never on another client's, and never
//     on the server's storage, registry or API server.
//   - The control plane (the serving layer and the root) runs the
//     controllers but depends on no agent or workload package.
func violations(deps map[string][]string) []string {
	var out []string
	for _, pkg := range slices.Sorted(maps.Keys(deps)) {
		from, ok := layerOf(pkg)
		if !ok {
			out = append(out, fmt.Sprintf("%s belongs to no layer (add it to layerOf and docs/README.md)", show(pkg)))
			continue
		}
		tree, _, _ := strings.Cut(pkg, "/")
		for _, dep := range deps[pkg] {
			to, ok := layerOf(dep)
			if !ok {
				continue // reported as a package of its own
			}
			depTree, _, _ := strings.Cut(dep, "/")
			switch {
			case from.client && to != base && depTree != tree:
				out = append(out, fmt.Sprintf("%s (client %s/) depends on %s (%s): clients import the base and their own tree only", show(pkg), tree, show(dep), to.name))
			case !from.client && to.rank > from.rank:
				out = append(out, fmt.Sprintf("%s (%s) depends on %s (%s), a higher layer", show(pkg), from.name, show(dep), to.name))
			case (from == serving || from == root) && to == clients && depTree != "controllers":
				out = append(out, fmt.Sprintf("%s (%s) depends on %s: the control plane imports no agent or workload package", show(pkg), from.name, show(dep)))
			}
		}
	}
	return out
}

func show(rel string) string {
	if rel == "" {
		return "kite"
	}
	return rel
}

func TestViolationsFindsImportsAgainstTheLayers(t *testing.T) {
	for _, tc := range []struct {
		name string
		deps map[string][]string
		want int
	}{
		{"each layer on the ones below", map[string][]string{
			"storage/etcd":           {"apis/core/options"},
			"registry/apiextensions": {"registry/table", "registry", "storage/etcd"},
			"apiserver":              {"registry", "storage/watchcache"},
			"resourceset":            {"apiserver", "registry", "storage/etcd"},
			"crdserving":             {"resourceset", "controllers/crd", "controllers/informer", "listwatch"},
			"":                       {"crdserving", "controllers", "pki"},
			"cmd/kite":               {"", "agent", "workload", "controllers"},
		}, 0},
		{"registry on the API server", map[string][]string{"registry/apiextensions": {"apiserver/table"}}, 1},
		{"storage on the API server's metrics", map[string][]string{"storage/etcd": {"apiserver/metrics"}}, 1},
		{"root on the agent for a constant", map[string][]string{"": {"agent/server"}}, 1},
		{"serving on a load generator", map[string][]string{"crdserving": {"workload"}}, 1},
		{"controller on the registry", map[string][]string{"controllers/job": {"registry"}}, 1},
		{"controller on the agent", map[string][]string{"controllers/podgc": {"agent/kubetypes"}}, 1},
		{"agent on a controller", map[string][]string{"agent/podsync": {"controllers/events"}}, 1},
		{"agent on its own tree and the base", map[string][]string{"agent/server": {"agent/runtime", "pki", "batchconn", "apis/core/options"}}, 0},
		{"a package of no layer", map[string][]string{"newthing": nil}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := violations(tc.deps)
			if len(got) != tc.want {
				t.Errorf("violations = %d %q, want %d", len(got), got, tc.want)
			}
		})
	}
}

// TestLayers runs go list -deps over the module (what builds, tests
// excluded: a test may start a whole server) and fails on every import
// against the layers.
func TestLayers(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	cmd := exec.CommandContext(t.Context(), gobin, "list", "-deps", "-json=ImportPath,Deps,Standard,Module", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	deps, err := moduleDeps(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) < 50 || deps[""] == nil {
		t.Fatalf("go list found %d packages of the module, the root with %d dependencies: not the module's graph", len(deps), len(deps[""]))
	}
	for _, v := range violations(deps) {
		t.Error(v)
	}
}

// moduleDeps reads go list -json's stream and returns each package of the
// module with the packages of the module it depends on, as paths relative
// to the module ("" for the root).
func moduleDeps(stream []byte) (map[string][]string, error) {
	rel := func(p string) (string, bool) {
		if p == module {
			return "", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	out := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(stream))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkg, ok := rel(p.ImportPath)
		if !ok {
			continue // the standard library and other modules
		}
		ds := []string{}
		for _, d := range p.Deps {
			if r, ok := rel(d); ok {
				ds = append(ds, r)
			}
		}
		out[pkg] = ds
	}
}
