package supervisor

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestRecordsKeepTheirFormat: the records are what a newer agent reads
// from the supervisors an older one left running (and what those
// supervisors read from it), so their JSON is pinned here, byte for byte,
// as the agent and supervisors of 2026-12-01 wrote it.
func TestRecordsKeepTheirFormat(t *testing.T) {
	adj := int64(-997)
	tests := []struct {
		name string
		json string
		rec  any
	}{
		{"spec.json", `{"id":"c1","args":["sh","-c","echo hi"],"env":["PATH=/bin"],"workingDir":"/tmp","logPath":"/var/log/pods/x/c/0.log","logMaxSize":10485760,"logMaxFiles":5,"cgroup":{"unified":"/sys/fs/cgroup/kite.slice/p/c1"},"mounts":[{"source":"/a","target":"/b","readOnly":true}],"user":{"uid":1000,"gid":1000,"groups":[5]},"oomScoreAdj":-997,"stdin":true,"stdinOnce":true,"tty":true}`,
			&ContainerSpec{ID: "c1", Args: []string{"sh", "-c", "echo hi"}, Env: []string{"PATH=/bin"}, WorkingDir: "/tmp", LogPath: "/var/log/pods/x/c/0.log",
				LogMaxSize: 10 << 20, LogMaxFiles: 5, Cgroup: CgroupPaths{Unified: "/sys/fs/cgroup/kite.slice/p/c1"},
				Mounts: []Mount{{Source: "/a", Target: "/b", ReadOnly: true}}, User: &User{UID: 1000, GID: 1000, Groups: []uint32{5}},
				OOMScoreAdj: &adj, Stdin: true, StdinOnce: true, TTY: true}},
		{"spec.json, v1 cgroups", `{"id":"c2","args":["sleep","1"],"env":null,"logPath":"/l","cgroup":{"memory":"/m","cpu":"/c","pids":"/p"}}`,
			&ContainerSpec{ID: "c2", Args: []string{"sleep", "1"}, LogPath: "/l", Cgroup: CgroupPaths{Memory: "/m", CPU: "/c", Pids: "/p"}}},
		{"started.json", `{"process":{"pid":4242,"startTime":123456},"supervisor":{"pid":4241,"startTime":123450},"startedAt":1764633600000000000,"bootID":"0b1c"}`,
			&StartedRecord{Process: ProcIdentity{PID: 4242, StartTime: 123456}, Supervisor: ProcIdentity{PID: 4241, StartTime: 123450}, StartedAt: 1764633600000000000, BootID: "0b1c"}},
		{"exit.json", `{"exitCode":128,"finishedAt":1764633600000000001,"reason":"StartError","message":"command \"x\": not found"}`,
			&ExitRecord{ExitCode: 128, FinishedAt: 1764633600000000001, Reason: "StartError", Message: `command "x": not found`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reflect.New(reflect.TypeOf(tt.rec).Elem()).Interface()
			dec := json.NewDecoder(bytes.NewReader([]byte(tt.json)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(got); err != nil {
				t.Fatalf("decode %s: %v", tt.json, err)
			}
			if !reflect.DeepEqual(got, tt.rec) {
				t.Errorf("decoded %+v, want %+v", got, tt.rec)
			}
			b, err := json.Marshal(tt.rec)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.json {
				t.Errorf("encoded\n%s\nwant\n%s", b, tt.json)
			}
		})
	}
}
