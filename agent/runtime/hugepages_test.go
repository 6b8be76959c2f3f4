package runtime

import "testing"

// TestHugePageSizeName: page sizes named as the kubelet and runc name them.
func TestHugePageSizeName(t *testing.T) {
	for size, name := range map[int64]string{2 << 20: "2MB", 1 << 30: "1GB", 64 << 10: "64KB", 16 << 30: "16GB", 3: "3B"} {
		if got, ok := HugePageSizeName(size); !ok || got != name {
			t.Errorf("HugePageSizeName(%d) = %q, %v; want %q", size, got, ok, name)
		}
	}
	if got, ok := HugePageSizeName(1025 << 10); ok {
		t.Errorf("HugePageSizeName(1025KiB) = %q; want none", got)
	}
}
