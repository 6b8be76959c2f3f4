package main

// CPU seconds per component of one burst. The long-lived processes (the
// agent, containerd, the shims) are read from /proc; the short-lived ones
// (runc, the CNI plugins, iptables/nft, the shims' "start" invocations)
// have left /proc by the time the burst ends, so they are read from BSD
// process accounting (acct(2), the kernel writes one acct_v3 record per
// exiting process with its own user and system time), switched on for the
// burst only. Accounting is machine-wide: the records are kept when their
// parent is one of ours (the agent, containerd, a shim of this containerd,
// or a process already kept), so other sessions' processes are left out.

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kite-project/kite/bench/procstat"
)

// acctRecord is the part of the kernel's struct acct_v3 (64 bytes,
// include/uapi/linux/acct.h) that is used here.
type acctRecord struct {
	pid, ppid uint32
	cpu       float64 // user+system seconds
	comm      string
}

// compT decodes the kernel's comp_t: a 13-bit mantissa and a 3-bit base-8
// exponent, in ticks of AHZ (100 per second).
func compT(v uint16) float64 {
	return float64(uint64(v&0x1fff)<<(3*(v>>13))) / 100
}

func parseAcct(b []byte) ([]acctRecord, error) {
	const size = 64
	var recs []acctRecord
	for off := 0; off+size <= len(b); off += size {
		r := b[off : off+size]
		if r[1]&0x0f != 3 {
			return nil, fmt.Errorf("acct record at %d: version %d, want 3", off, r[1]&0x0f)
		}
		le := binary.LittleEndian
		comm := string(r[48:64])
		if i := strings.IndexByte(comm, 0); i >= 0 {
			comm = comm[:i]
		}
		recs = append(recs, acctRecord{
			pid: le.Uint32(r[16:20]), ppid: le.Uint32(r[20:24]),
			cpu:  compT(le.Uint16(r[32:34])) + compT(le.Uint16(r[34:36])),
			comm: comm,
		})
	}
	return recs, nil
}

// component names the group a process's command belongs to.
func component(comm string) string {
	switch {
	case strings.HasPrefix(comm, "containerd-shim"):
		return "shim_start"
	case comm == "runc":
		return "runc"
	case comm == "bridge" || comm == "host-local" || comm == "portmap" || comm == "loopback" || comm == "firewall" || comm == "bandwidth" || comm == "tuning":
		return "cni"
	case strings.HasPrefix(comm, "iptables") || strings.HasPrefix(comm, "ip6tables") || comm == "nft" || strings.HasPrefix(comm, "xtables"):
		return "iptables_nft"
	}
	return "other_" + comm
}

// burstCPU measures one burst's CPU per component.
type burstCPU struct {
	acctFile      string
	agent, ctrd   int
	sock          string
	agent0, ctrd0 float64
	shimsBefore   map[int]float64 // CPU of each shim that was there before
	AgentSec      float64         `json:"agent_s"`
	ContainerdSec float64         `json:"containerd_s"`
	ShimsSec      float64         `json:"shims_s"` // the shim daemons' own time (not their children's)
	// ContainersSec is the growth of the live containers' first processes
	// (children of the shims): runc's init stage, which sets the container
	// up in that process before it execs the container's command, then
	// the command's own time. Not in total_s, which earlier runs reported
	// without it.
	ContainersSec    float64 `json:"containers_s"`
	containersBefore map[int]float64
	ExitedSec        map[string]float64 `json:"exited_s"`
	ExitedCount      map[string]int     `json:"exited_count"`
	TotalSec         float64            `json:"total_s"`
	Pods             int                `json:"pods"`
	PerPodSec        float64            `json:"per_pod_s"`      // total_s / pods
	WallSec          float64            `json:"wall_s"`         // from start to stop
	PerPodExcl       float64            `json:"per_pod_excl_s"` // per pod, without the agent's own time
	MachineBusySec   float64            `json:"machine_busy_s"` // all CPUs, every process on the machine: the load
	machineBusyStart float64
	t0               time.Time
}

// shims are the live shim daemons of the containerd at sock (their
// command line names its address).
func shims(sock string) map[int]bool {
	out := map[int]bool{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), "containerd-shim") || !strings.Contains(string(b), sock) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		out[pid] = true
	}
	return out
}

func shimCPU(pids map[int]bool) float64 {
	var s float64
	for p := range pids {
		c, err := procstat.CPUSeconds(p)
		if err == nil {
			s += c
		}
	}
	return s
}

// containerCPU is the CPU seconds of each live process whose parent is one
// of the shims.
func containerCPU(shimPIDs map[int]bool) map[int]float64 {
	out := map[int]float64{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		if ppid, err := procstat.Parent(pid); err != nil || !shimPIDs[ppid] {
			continue
		}
		if c, err := procstat.CPUSeconds(pid); err == nil {
			out[pid] = c
		}
	}
	return out
}

// machineBusy is the seconds all CPUs spent not idle (/proc/stat).
func machineBusy() float64 {
	b, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy / 100
}

func startBurstCPU(dir string, agent, ctrd int, sock string) (*burstCPU, error) {
	b := &burstCPU{acctFile: filepath.Join(dir, "burst.acct"), agent: agent, ctrd: ctrd, sock: sock}
	if err := os.WriteFile(b.acctFile, nil, 0o600); err != nil {
		return nil, err
	}
	var err error
	if b.agent0, err = procstat.CPUSeconds(agent); err != nil {
		return nil, err
	}
	if b.ctrd0, err = procstat.CPUSeconds(ctrd); err != nil {
		return nil, err
	}
	b.shimsBefore = map[int]float64{}
	for p := range shims(sock) {
		b.shimsBefore[p], _ = procstat.CPUSeconds(p)
	}
	b.containersBefore = containerCPU(shims(sock))
	b.machineBusyStart = machineBusy()
	b.t0 = time.Now()
	if err := syscall.Acct(b.acctFile); err != nil {
		return nil, fmt.Errorf("acct %s: %w", b.acctFile, err)
	}
	return b, nil
}

// stop ends the measurement of a phase that started pods pods.
func (b *burstCPU) stop(pods int) error {
	b.WallSec = time.Since(b.t0).Seconds()
	live := shims(b.sock)
	agent1, err1 := procstat.CPUSeconds(b.agent)
	ctrd1, err2 := procstat.CPUSeconds(b.ctrd)
	// Shims that were there before the burst count with their growth only.
	shims1 := shimCPU(live)
	for p := range live {
		shims1 -= b.shimsBefore[p]
	}
	for p, c := range containerCPU(live) {
		b.ContainersSec += c - b.containersBefore[p]
	}
	b.MachineBusySec = machineBusy() - b.machineBusyStart
	syscall.Acct("")
	if err1 != nil || err2 != nil {
		return fmt.Errorf("burst cpu: %v %v", err1, err2)
	}
	raw, err := os.ReadFile(b.acctFile)
	if err != nil {
		return err
	}
	os.Remove(b.acctFile)
	recs, err := parseAcct(raw)
	if err != nil {
		return err
	}
	b.AgentSec, b.ContainerdSec = agent1-b.agent0, ctrd1-b.ctrd0
	b.ShimsSec = shims1
	ours := map[uint32]bool{uint32(b.agent): true, uint32(b.ctrd): true}
	for p := range live {
		ours[uint32(p)] = true
	}
	kept := make([]bool, len(recs))
	for changed := true; changed; {
		changed = false
		for i, r := range recs {
			if !kept[i] && ours[r.ppid] {
				kept[i], ours[r.pid], changed = true, true, true
			}
		}
	}
	b.ExitedSec, b.ExitedCount = map[string]float64{}, map[string]int{}
	b.TotalSec = b.AgentSec + b.ContainerdSec + b.ShimsSec
	for i, r := range recs {
		if kept[i] {
			c := component(r.comm)
			b.ExitedSec[c] += r.cpu
			b.ExitedCount[c]++
			b.TotalSec += r.cpu
		}
	}
	b.Pods = pods
	if pods > 0 {
		b.PerPodSec = b.TotalSec / float64(pods)
		b.PerPodExcl = (b.TotalSec - b.AgentSec) / float64(pods)
	}
	return nil
}
