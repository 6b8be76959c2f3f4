package podsync

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// TestAllocationCheckpointRoundTripsAndRefusesCorruption: what is written
// reads back the same; a file whose data no longer matches its checksum,
// or that is not a checkpoint, is an error (the agent then starts from
// the specs); no file is no entry.
func TestAllocationCheckpointRoundTripsAndRefusesCorruption(t *testing.T) {
	entries := map[types.UID]allocationEntry{"uid-1": {
		ContainerResources: map[string]v1.ResourceRequirements{"main": {Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("400m")}}},
		ActuatedResources:  map[string]v1.ResourceRequirements{"c0ffee": {Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("400m")}}},
	}}
	good, err := encodeAllocations(entries)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		content []byte // nil: no file
		want    map[types.UID]allocationEntry
		wantErr string
	}{
		{"no file", nil, nil, ""},
		{"round trip", good, entries, ""},
		{"data changed under its checksum", []byte(strings.Replace(string(good), "400m", "900m", 1)), nil, "checksum does not match"},
		{"not a checkpoint", []byte("{"), nil, "decode allocation checkpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.content != nil {
				if err := os.WriteFile(filepath.Join(dir, AllocationCheckpointFile), tc.content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := loadAllocations(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
