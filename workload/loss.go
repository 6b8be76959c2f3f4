package workload

// Delivery is what one watcher made of the events it expected: how many it
// never saw, saw more than once, or saw after a later one.
type Delivery struct {
	Expected   int `json:"expected"`
	Received   int `json:"received"`
	Lost       int `json:"lost"`
	Duplicates int `json:"duplicates"`
	OutOfOrder int `json:"outOfOrder"`
	// Unexpected are events the watcher should not have seen (another
	// node's pod, for a watcher of one node).
	Unexpected int `json:"unexpected"`
}

// add sums d into t.
func (t *Delivery) add(d Delivery) {
	t.Expected += d.Expected
	t.Received += d.Received
	t.Lost += d.Lost
	t.Duplicates += d.Duplicates
	t.OutOfOrder += d.OutOfOrder
	t.Unexpected += d.Unexpected
}

// CheckDelivery compares the resourceVersions a watcher received, in the
// order it received them, with the ones it should have received: each
// expected one exactly once, in increasing order. expected need not be
// sorted.
func CheckDelivery(expected, received []uint64) Delivery {
	d := Delivery{Expected: len(expected), Received: len(received)}
	want := make(map[uint64]bool, len(expected))
	for _, rv := range expected {
		want[rv] = true
	}
	seen := make(map[uint64]bool, len(received))
	var last uint64
	for _, rv := range received {
		switch {
		case seen[rv]:
			d.Duplicates++
			continue
		case !want[rv]:
			d.Unexpected++
		}
		seen[rv] = true
		if rv <= last {
			d.OutOfOrder++
		}
		last = max(last, rv)
	}
	for rv := range want {
		if !seen[rv] {
			d.Lost++
		}
	}
	return d
}
