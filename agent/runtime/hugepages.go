package runtime

import "strconv"

// HugePageSizeName is a page size in bytes as the CRI's HugepageLimit and
// cgroups name it (the kubelet's HugePageUnitSizeFromByteSize, runc's unit
// list): in the largest unit that divides it, "2MB" for 2 MiB; false for
// a size no unit divides below 1024 of it.
func HugePageSizeName(size int64) (string, bool) {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	if size > 1024 && i < len(units)-1 {
		return "", false
	}
	return strconv.FormatInt(size, 10) + units[i], true
}
