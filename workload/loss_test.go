package workload_test

import (
	"testing"

	"github.com/kite-project/kite/workload"
)

func TestCheckDelivery(t *testing.T) {
	tests := []struct {
		name               string
		expected, received []uint64
		want               workload.Delivery
	}{
		{"every event once, in order", []uint64{30, 10, 20}, []uint64{10, 20, 30},
			workload.Delivery{Expected: 3, Received: 3}},
		{"none expected, none received", nil, nil, workload.Delivery{}},
		{"one missed", []uint64{10, 20, 30}, []uint64{10, 30},
			workload.Delivery{Expected: 3, Received: 2, Lost: 1}},
		{"all missed", []uint64{10, 20}, nil,
			workload.Delivery{Expected: 2, Lost: 2}},
		{"one twice", []uint64{10, 20}, []uint64{10, 20, 20},
			workload.Delivery{Expected: 2, Received: 3, Duplicates: 1}},
		{"a duplicate does not stand in for a missed one", []uint64{10, 20}, []uint64{10, 10},
			workload.Delivery{Expected: 2, Received: 2, Lost: 1, Duplicates: 1}},
		{"swapped", []uint64{10, 20, 30}, []uint64{10, 30, 20},
			workload.Delivery{Expected: 3, Received: 3, OutOfOrder: 1}},
		{"one not asked for", []uint64{10, 30}, []uint64{10, 20, 30},
			workload.Delivery{Expected: 2, Received: 3, Unexpected: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := workload.CheckDelivery(tt.expected, tt.received); got != tt.want {
				t.Fatalf("CheckDelivery(%v, %v) = %+v, want %+v", tt.expected, tt.received, got, tt.want)
			}
		})
	}
}
