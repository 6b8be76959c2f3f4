package supervisor

import (
	"os"
	"strings"
)

// The few path operations the supervisor needs, written here rather than
// taken from path/filepath: that package sorts after k8s.io, and
// importing it would have most of the binary's initialisers run before
// this package's (see init in role.go). Paths here are the runtime's own,
// clean and absolute, or PATH entries.

// joinPath is filepath.Join of a directory and a name.
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// dirOf is filepath.Dir of a clean path.
func dirOf(path string) string {
	path = strings.TrimSuffix(path, "/")
	i := strings.LastIndexByte(path, '/')
	switch {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	}
	return path[:i]
}

// splitList is filepath.SplitList: PATH's entries.
func splitList(path string) []string {
	if path == "" {
		return nil
	}
	return strings.Split(path, ":")
}

// withPrefix lists the files beside path whose names start with path's
// name followed by suffix, sorted (as filepath.Glob(path+suffix+"*")
// would, without the escaping of path's pattern characters).
func withPrefix(path, suffix string) ([]string, error) {
	dir := dirOf(path)
	prefix := path[len(dir):]
	prefix = strings.TrimPrefix(prefix, "/") + suffix
	ents, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, joinPath(dir, e.Name()))
		}
	}
	return out, nil
}
