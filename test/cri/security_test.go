package cri

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// denyUnshare is a Localhost seccomp profile that allows everything but
// unshare(2), which fails with EPERM.
const denyUnshare = `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["unshare"], "action": "SCMP_ACT_ERRNO"}]}`

// TestSecurityContextOnContainerd: what the security context asks is
// what the container gets from runc: seccomp RuntimeDefault blocks
// unshare(2) (containerd's default profile allows it only with
// CAP_SYS_ADMIN), Unconfined and no profile at all (the kubelet's default
// without seccompDefault) do not filter, a Localhost profile is read from
// <root-dir>/seccomp; the user and group, privileged (every capability),
// added and dropped capabilities, and a read-only root. AppArmor
// Unconfined runs on a host without AppArmor, where a pod that asks for a
// confining profile is refused at admission as by the kubelet (this host
// has none, so profiles that confine cannot be checked here).
func TestSecurityContextOnContainerd(t *testing.T) {
	root := t.TempDir()
	a := startAgent(t, "cri-security", root)
	if err := os.MkdirAll(filepath.Join(root, "seccomp", "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "seccomp", "profiles", "deny-unshare.json"), []byte(denyUnshare), 0o644); err != nil {
		t.Fatal(err)
	}
	local := "profiles/deny-unshare.json"
	user, group := int64(1234), int64(5678)
	yes := true
	// The filter mode of /proc/self/status (0 none, 2 a filter) and
	// whether unshare -U (a user namespace, which needs no capability)
	// works.
	const probe = `grep '^Seccomp:' /proc/self/status; unshare -U true 2>/dev/null && echo unshare ok || echo unshare refused`
	cases := []struct {
		name   string
		pod    *v1.PodSecurityContext
		sc     *v1.SecurityContext
		script string
		want   string
	}{
		{name: "no-profile-is-unconfined", script: probe, want: "Seccomp:\t0\nunshare ok\n"},
		{name: "runtime-default-blocks-unshare", sc: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			script: probe, want: "Seccomp:\t2\nunshare refused\n"},
		{name: "pod-runtime-default-container-unconfined",
			pod:    &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			sc:     &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}},
			script: probe, want: "Seccomp:\t0\nunshare ok\n"},
		{name: "pod-runtime-default", pod: &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			script: probe, want: "Seccomp:\t2\nunshare refused\n"},
		{name: "localhost-profile", sc: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &local}},
			script: probe, want: "Seccomp:\t2\nunshare refused\n"},
		{name: "user-and-group", pod: &v1.PodSecurityContext{RunAsUser: &user, RunAsGroup: &group},
			script: "id -u; id -g", want: "1234\n5678\n"},
		{name: "privileged-has-sys-admin", sc: &v1.SecurityContext{Privileged: &yes},
			script: capHas(21), want: "yes\n"},
		{name: "default-lacks-sys-admin", script: capHas(21), want: "no\n"},
		{name: "added-net-admin", sc: &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}}},
			script: capHas(12), want: "yes\n"},
		{name: "dropped-chown", sc: &v1.SecurityContext{Capabilities: &v1.Capabilities{Drop: []v1.Capability{"CHOWN"}}},
			script: capHas(0), want: "no\n"},
		{name: "read-only-root", sc: &v1.SecurityContext{ReadOnlyRootFilesystem: &yes},
			script: "touch /x 2>/dev/null && echo wrote || echo refused", want: "refused\n"},
		{name: "apparmor-unconfined-runs", sc: &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}},
			script: "echo ran", want: "ran\n"},
	}
	t.Run("apparmor-refused-without-apparmor", func(t *testing.T) {
		t.Parallel()
		if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err == nil && strings.HasPrefix(string(b), "Y") {
			t.Skip("skipped: this host has AppArmor; the case is for hosts without it")
		}
		p := a.pod(t, "apparmor", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
			p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		})
		p = a.wait(t, p, "Failed", phase(v1.PodFailed))
		if p.Status.Reason != "AppArmor" || p.Status.Message != "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host" {
			t.Errorf("reason %q message %q, want the kubelet's AppArmor rejection", p.Status.Reason, p.Status.Message)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := a.pod(t, "sec", func(p *v1.Pod) {
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				p.Spec.SecurityContext = tc.pod
				c := &p.Spec.Containers[0]
				c.SecurityContext = tc.sc
				c.Command = []string{"sh", "-c", "{ " + tc.script + "; } > /dev/termination-log"}
			})
			p = a.wait(t, p, "Succeeded", phase(v1.PodSucceeded))
			tm := mainStatus(p).State.Terminated
			if tm == nil || tm.Message != tc.want {
				t.Errorf("%s: %+v; want the message %q", tc.script, tm, tc.want)
			}
		})
	}
}

// capHas prints yes when the effective capabilities hold bit n.
func capHas(n int) string {
	return strings.ReplaceAll(`e=$(grep CapEff /proc/self/status | cut -f2); [ $(( 0x$e >> N & 1 )) = 1 ] && echo yes || echo no`, "N", strconv.Itoa(n))
}
