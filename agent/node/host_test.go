package node

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDefaultRouteInterface reads /proc/net/route as the kernel writes it:
// the interface of the 0.0.0.0/0 route, wherever it is in the table.
func TestDefaultRouteInterface(t *testing.T) {
	const header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	tests := []struct {
		name, routes, want string
	}{
		{"default first", header + "eth0\t00000000\t0100D50A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
			"eth0\t0000D50A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", "eth0"},
		{"default after a link route", header + "veth1\t0001D50A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" +
			"wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n", "wlan0"},
		{"no default route", header + "eth0\t0000D50A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", ""},
		{"empty table", header, ""},
		{"no file", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "route")
			if tt.routes != "" {
				if err := os.WriteFile(path, []byte(tt.routes), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := defaultRouteInterface(path); got != tt.want {
				t.Errorf("defaultRouteInterface = %q, want %q", got, tt.want)
			}
		})
	}
}
