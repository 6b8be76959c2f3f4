package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kite-project/kite/controllers"
)

func TestNodeIPAMFlagsReachTheOptions(t *testing.T) {
	tests := []struct {
		args    []string
		runs    bool
		cidrs   string
		mask    int
		wantErr string
	}{
		{nil, true, "[10.42.0.0/16]", 24, ""},
		{[]string{"--cluster-cidr", "10.244.0.0/16, fd44::/56", "--node-cidr-mask-size", "26"}, true, "[10.244.0.0/16 fd44::/56]", 26, ""},
		{[]string{"--allocate-node-cidrs=false"}, false, "[]", 24, ""},
		{[]string{"--cluster-cidr", "10.244.0.0"}, false, "", 0, "--cluster-cidr"},
		{[]string{"--node-cidr-mask-size", "8"}, false, "", 0, "--node-cidr-mask-size"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var f apiFlags
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			f.add(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			opts, err := f.options(t.TempDir())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			runs := slices.Contains(opts.Controllers, controllers.NodeIPAM)
			if runs != tt.runs || fmt.Sprint(opts.ClusterCIDRs) != tt.cidrs || opts.NodeCIDRMaskSize != tt.mask {
				t.Errorf("node IPAM controller runs %v, ClusterCIDRs %v, NodeCIDRMaskSize %d; want %v, %s, %d", runs, opts.ClusterCIDRs, opts.NodeCIDRMaskSize, tt.runs, tt.cidrs, tt.mask)
			}
		})
	}
}
