package job

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestCaughtUp(t *testing.T) {
	tests := []struct {
		read, wrote string
		want        bool
	}{
		{"10", "10", true},
		{"11", "10", true},
		{"9", "10", false},
		{"100", "99", true}, // decimal, not lexical
		{"99", "100", false},
		{"", "10", true},    // a cache that cannot tell never blocks
		{"abc", "10", true}, // nor one with resourceVersions that are not integers
	}
	for _, tc := range tests {
		if got := CaughtUp(tc.read, tc.wrote); got != tc.want {
			t.Errorf("CaughtUp(%q, %q) = %v, want %v", tc.read, tc.wrote, got, tc.want)
		}
	}
}

func TestWritesWaitForEveryCache(t *testing.T) {
	w := newWrites()
	uid := types.UID("job")
	w.wroteAt(uid, resJobs, "20")
	w.wroteAt(uid, resJobs, "15") // older: the newer write still counts
	w.wroteAt(uid, resPods, "18")
	read := map[string]string{resJobs: "19", resPods: "30"}
	lastSync := func(r string) string { return read[r] }
	if err := w.ready(uid, lastSync); err == nil {
		t.Fatal("ready with the jobs cache at 19 after a write at 20")
	}
	if err := w.ready("other", lastSync); err != nil {
		t.Fatalf("another Job waits on this one's writes: %v", err)
	}
	read[resJobs] = "20"
	if err := w.ready(uid, lastSync); err != nil {
		t.Fatalf("not ready once both caches caught up: %v", err)
	}
	read[resJobs] = "1" // forgotten once ready: a re-list back in time does not block
	if err := w.ready(uid, lastSync); err != nil {
		t.Fatalf("ready remembers writes already seen: %v", err)
	}
}
