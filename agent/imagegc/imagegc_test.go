package imagegc

import (
	"errors"
	"reflect"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func TestDetectRecordsFirstDetectedAndLastUsed(t *testing.T) {
	old := map[string]Record{
		"sha256:a":    {ID: "sha256:a", Size: 1, FirstDetected: t0.Add(-time.Hour), LastUsed: t0.Add(-30 * time.Minute)},
		"sha256:b":    {ID: "sha256:b", Size: 2, FirstDetected: t0.Add(-time.Hour)},
		"sha256:gone": {ID: "sha256:gone", FirstDetected: t0.Add(-time.Hour)},
	}
	images := []*runtimeapi.Image{
		{Id: "sha256:a", Size: 1},
		{Id: "sha256:b", Size: 2, RepoTags: []string{"registry.k8s.io/e2e-test-images/busybox:1.37.0-2"}},
		{Id: "sha256:c", Size: 3, RepoDigests: []string{"example.com/c@sha256:cc"}},
		{Id: "sha256:pause", Size: 4, RepoTags: []string{"registry.k8s.io/pause:3.10.2"}, Pinned: true},
	}
	inUse := ContainersInUse([]*runtimeapi.Container{
		{Image: &runtimeapi.ImageSpec{Image: "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"}},
		{ImageRef: "example.com/c@sha256:cc"},
	}, "registry.k8s.io/pause:3.10.2")
	got := Detect(old, images, inUse, t0)
	want := map[string]Record{
		// Kept as it was: not in use now.
		"sha256:a": {ID: "sha256:a", Size: 1, FirstDetected: t0.Add(-time.Hour), LastUsed: t0.Add(-30 * time.Minute)},
		// In use by its tag.
		"sha256:b": {ID: "sha256:b", Size: 2, FirstDetected: t0.Add(-time.Hour), LastUsed: t0},
		// New, and in use by its digest.
		"sha256:c": {ID: "sha256:c", Size: 3, FirstDetected: t0, LastUsed: t0},
		// The sandbox image, pinned, in use by name.
		"sha256:pause": {ID: "sha256:pause", Size: 4, FirstDetected: t0, LastUsed: t0, Pinned: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Detect =\n%+v\nwant\n%+v", got, want)
	}
}

func TestMakePlanAsTheKubeletsPolicy(t *testing.T) {
	const gi = 1 << 30
	p := Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
	old := t0.Add(-time.Hour)
	recs := func(rs ...Record) map[string]Record {
		m := map[string]Record{}
		for _, r := range rs {
			m[r.ID] = r
		}
		return m
	}
	ids := func(rs []Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		policy    Policy
		usage     Usage
		records   map[string]Record
		wantPct   int
		wantFree  int64
		wantOrder []string
		wantErr   error
	}{
		{name: "below the high threshold: nothing", policy: p, usage: Usage{Capacity: 100 * gi, Available: 16 * gi},
			records: recs(Record{ID: "a", Size: gi, FirstDetected: old}), wantPct: 84},
		{name: "at the high threshold: down to the low one, least recently used first", policy: p,
			usage: Usage{Capacity: 100 * gi, Available: 15 * gi},
			records: recs(
				Record{ID: "used-late", Size: gi, FirstDetected: old, LastUsed: t0.Add(-time.Minute)},
				Record{ID: "never-used", Size: gi, FirstDetected: old},
				Record{ID: "used-early", Size: gi, FirstDetected: old, LastUsed: t0.Add(-50 * time.Minute)},
			),
			wantPct: 85, wantFree: 5 * gi, wantOrder: []string{"never-used", "used-early", "used-late"}},
		{name: "ties on last use go by first detection", policy: p, usage: Usage{Capacity: 100 * gi, Available: 10 * gi},
			records: recs(
				Record{ID: "b", Size: gi, FirstDetected: old.Add(time.Minute)},
				Record{ID: "a", Size: gi, FirstDetected: old},
			),
			wantPct: 90, wantFree: 10 * gi, wantOrder: []string{"a", "b"}},
		{name: "in use, pinned and young images are never candidates", policy: p, usage: Usage{Capacity: 100 * gi, Available: 0},
			records: recs(
				Record{ID: "in-use", Size: gi, FirstDetected: old, LastUsed: t0},
				Record{ID: "pause", Size: gi, FirstDetected: old, Pinned: true},
				Record{ID: "young", Size: gi, FirstDetected: t0.Add(-time.Minute)},
				Record{ID: "old", Size: gi, FirstDetected: old},
			),
			wantPct: 100, wantFree: 20 * gi, wantOrder: []string{"old"}},
		{name: "minimum age zero takes a new unused image", policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80},
			usage: Usage{Capacity: 100 * gi, Available: 0}, records: recs(Record{ID: "new", Size: gi, FirstDetected: t0}),
			wantPct: 100, wantFree: 20 * gi, wantOrder: []string{"new"}},
		{name: "available above capacity counts as capacity", policy: p, usage: Usage{Capacity: 10, Available: 20}, wantPct: 0},
		{name: "no capacity is an error", policy: p, usage: Usage{}, wantErr: ErrInvalidCapacity},
		{name: "a high threshold of 100 collects only a full disk", policy: Policy{HighThresholdPercent: 100, LowThresholdPercent: 90},
			usage: Usage{Capacity: 100 * gi, Available: gi}, records: recs(Record{ID: "a", Size: gi, FirstDetected: old}), wantPct: 99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := MakePlan(tc.policy, tc.usage, tc.records, t0)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if plan.UsagePercent != tc.wantPct || plan.BytesToFree != tc.wantFree || !reflect.DeepEqual(ids(plan.Candidates), tc.wantOrder) {
				t.Fatalf("plan: usage %d%%, free %d, candidates %v; want %d%%, %d, %v",
					plan.UsagePercent, plan.BytesToFree, ids(plan.Candidates), tc.wantPct, tc.wantFree, tc.wantOrder)
			}
		})
	}
}

func TestPolicyValidateAsTheKubelet(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{DefaultPolicy, ""},
		{Policy{HighThresholdPercent: 101}, "invalid HighThresholdPercent 101, must be in range [0-100]"},
		{Policy{HighThresholdPercent: 50, LowThresholdPercent: -1}, "invalid LowThresholdPercent -1, must be in range [0-100]"},
		{Policy{HighThresholdPercent: 50, LowThresholdPercent: 60}, "LowThresholdPercent 60 can not be higher than HighThresholdPercent 50"},
	} {
		err := tc.p.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
}
