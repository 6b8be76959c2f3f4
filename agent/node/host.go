package node

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Host reads what the machine reports of itself. Every field is
// best-effort: what cannot be read is left zero.
type Host struct {
	// Proc is the procfs mount ("/proc" when empty).
	Proc string
}

func (h Host) proc(name string) string {
	if h.Proc == "" {
		return "/proc/" + name
	}
	return h.Proc + "/" + name
}

// SystemInfo is nodeInfo without the versions the agent fills in.
func (h Host) SystemInfo() v1.NodeSystemInfo {
	return v1.NodeSystemInfo{
		MachineID:       readTrimmed("/etc/machine-id"),
		SystemUUID:      readTrimmed("/sys/class/dmi/id/product_uuid"),
		BootID:          readTrimmed(h.proc("sys/kernel/random/boot_id")),
		KernelVersion:   readTrimmed(h.proc("sys/kernel/osrelease")),
		OSImage:         osImage(),
		OperatingSystem: runtime.GOOS,
		Architecture:    runtime.GOARCH,
	}
}

// osImage is PRETTY_NAME of os-release, as the kubelet reports it.
func osImage() string {
	for _, f := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				return strings.Trim(v, `"'`)
			}
		}
	}
	return "Unknown"
}

// Memory is MemTotal and MemAvailable of meminfo, in bytes.
func (h Host) Memory() (total, available int64) {
	b, err := os.ReadFile(h.proc("meminfo"))
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			total = kb << 10
		case "MemAvailable:":
			available = kb << 10
		}
	}
	return total, available
}

// PIDs is the number of processes and the kernel's limit (pid_max).
func (h Host) PIDs() (used, max int64) {
	max, _ = strconv.ParseInt(readTrimmed(h.proc("sys/kernel/pid_max")), 10, 64)
	// loadavg's fourth field is running/total scheduling entities.
	f := strings.Fields(readTrimmed(h.proc("loadavg")))
	if len(f) >= 4 {
		if _, total, ok := strings.Cut(f[3], "/"); ok {
			used, _ = strconv.ParseInt(total, 10, 64)
		}
	}
	return used, max
}

// InternalIP is the address the node is reached on when no --node-ip is
// given: the first global unicast IPv4 address of the interface that
// holds the default route, else of any interface that is up, else
// 127.0.0.1. It sends nothing on the network.
func (h Host) InternalIP() net.IP {
	if ip := addrOf(defaultRouteInterface(h.proc("net/route"))); ip != nil {
		return ip
	}
	ifaces, _ := net.Interfaces()
	for _, i := range ifaces {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 {
			if ip := addrOf(i.Name); ip != nil {
				return ip
			}
		}
	}
	return net.IPv4(127, 0, 0, 1)
}

// defaultRouteInterface is the interface of the IPv4 default route in
// /proc/net/route, "" if none.
func defaultRouteInterface(routes string) string {
	b, err := os.ReadFile(routes)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 2 && f[1] == "00000000" {
			return f[0]
		}
	}
	return ""
}

func addrOf(name string) net.IP {
	if name == "" {
		return nil
	}
	i, err := net.InterfaceByName(name)
	if err != nil {
		return nil
	}
	addrs, _ := i.Addrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.To4()
		}
	}
	return nil
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
