package process

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

func TestResolveUser(t *testing.T) {
	sc := func(f func(*runtimeapi.LinuxContainerSecurityContext)) *runtimeapi.LinuxContainerSecurityContext {
		s := &runtimeapi.LinuxContainerSecurityContext{}
		f(s)
		return s
	}
	tests := []struct {
		name    string
		sc      *runtimeapi.LinuxContainerSecurityContext
		want    *supervisor.User
		wantErr string
	}{
		{"no security context", nil, nil, ""},
		{"nothing about users", sc(func(s *runtimeapi.LinuxContainerSecurityContext) { s.Privileged = true }), nil, ""},
		{"uid and gid", sc(func(s *runtimeapi.LinuxContainerSecurityContext) {
			s.RunAsUser, s.RunAsGroup = &runtimeapi.Int64Value{Value: 4321}, &runtimeapi.Int64Value{Value: 8765}
		}), &supervisor.User{UID: 4321, GID: 8765}, ""},
		{"unknown uid gets group 0", sc(func(s *runtimeapi.LinuxContainerSecurityContext) { s.RunAsUser = &runtimeapi.Int64Value{Value: 4321} }), &supervisor.User{UID: 4321}, ""},
		{"root by name", sc(func(s *runtimeapi.LinuxContainerSecurityContext) { s.RunAsUsername = "root" }), &supervisor.User{}, ""},
		{"supplemental groups only", sc(func(s *runtimeapi.LinuxContainerSecurityContext) { s.SupplementalGroups = []int64{5, 6} }), &supervisor.User{Groups: []uint32{5, 6}}, ""},
		{"unknown name", sc(func(s *runtimeapi.LinuxContainerSecurityContext) { s.RunAsUsername = "no-such-user-kite" }), nil, "no-such-user-kite"},
		{"negative uid", sc(func(s *runtimeapi.LinuxContainerSecurityContext) { s.RunAsUser = &runtimeapi.Int64Value{Value: -1} }), nil, "not a valid ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveUser(tt.sc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("resolveUser = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestContainerRunsAsItsUser checks both ways of starting a command, and
// ExecSync (directly, and through nsenter for the container with a mount),
// with runAsUser, runAsGroup and supplementalGroups.
func TestContainerRunsAsItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a container as another user")
	}
	forEachStartPath(t, func(t *testing.T, f *fixture, prepare func(*runtimeapi.ContainerConfig)) {
		cfg := containerConfig("user", "sh", "-c", `echo "ids $(id -u) $(id -g) $(id -G)"; sleep 100`)
		cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			RunAsUser: &runtimeapi.Int64Value{Value: 4321}, RunAsGroup: &runtimeapi.Int64Value{Value: 8765}, SupplementalGroups: []int64{555},
		}}
		prepare(cfg)
		id := f.run(cfg)
		f.waitLog("user", "stdout F ids 4321 8765 8765 555", 5*time.Second)
		res, err := f.rt.ExecSync(context.Background(), id, []string{"id", "-u"}, 5*time.Second)
		if err != nil || strings.TrimSpace(string(res.Stdout)) != "4321" {
			t.Errorf("ExecSync id -u: %q %q %v, want 4321", res.Stdout, res.Stderr, err)
		}
		if err := f.rt.StopContainer(context.Background(), id, 0); err != nil {
			t.Fatal(err)
		}
	})
}
