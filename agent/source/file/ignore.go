package file

import "strings"

// ignoredSuffixes are editors' and tools' leftovers: backups, swap files and
// temporary files, never manifests.
var ignoredSuffixes = []string{"~", ".swp", ".bak", ".backup", ".tmp"}

// Ignored says whether a directory entry is not read as a manifest: a name
// starting with "." or ending with one of ignoredSuffixes.
func Ignored(name string) bool {
	if strings.HasPrefix(name, ".") {
		return true
	}
	for _, suffix := range ignoredSuffixes {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}
