package flowcontrol

import (
	"slices"
	"testing"
)

func TestDeal(t *testing.T) {
	for _, tt := range []struct {
		name       string
		hash       uint64
		deck, hand int
		want       []int
	}{
		// Digits of the hash in radix (deck, deck-1, ...), each the
		// index among the cards not picked yet.
		{"first digit only", 2, 4, 1, []int{2}},
		{"zero picks the lowest cards", 0, 8, 3, []int{0, 1, 2}},
		// 7 = 3 + 4×1: card 3, then the 1st unpicked of {0,1,2,4}: 1.
		{"second card skips the first", 7, 4, 2, []int{1, 3}},
		// 3 + 4×2: card 3, then unpicked #2 of {0,1,2,4}... of 4 cards: {0,1,2}: 2.
		{"second card below the first", 11, 4, 2, []int{2, 3}},
		{"whole deck", 12345, 5, 5, []int{0, 1, 2, 3, 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf [maxHand]int
			got := slices.Clone(deal(tt.hash, tt.deck, tt.hand, buf[:]))
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("deal(%d, %d, %d) = %v, want %v", tt.hash, tt.deck, tt.hand, got, tt.want)
			}
		})
	}
}

// TestDealDistinct checks that every hand holds distinct cards of the
// deck, for many flows, and that flows spread over the queues.
func TestDealDistinct(t *testing.T) {
	seen := make([]int, 64)
	for i := range 2000 {
		var buf [maxHand]int
		hand := deal(flowHash("schema", string(rune(i))), 64, 8, buf[:])
		if len(hand) != 8 {
			t.Fatalf("hand %v of %d cards, want 8", hand, len(hand))
		}
		for j, c := range hand {
			if c < 0 || c >= 64 || slices.Contains(hand[:j], c) {
				t.Fatalf("hand %v: card %d repeated or off the deck", hand, c)
			}
			seen[c]++
		}
	}
	for q, n := range seen {
		if n < 100 { // 250 on average
			t.Errorf("queue %d in %d hands of 2000: flows do not spread", q, n)
		}
	}
}

func TestFlowHash(t *testing.T) {
	if flowHash("a", "bc") == flowHash("ab", "c") {
		t.Error("the schema and distinguisher run together")
	}
	if flowHash("s", "alice") != flowHash("s", "alice") {
		t.Error("not deterministic")
	}
}

func TestChooseQueue(t *testing.T) {
	qs := newQueues(4)
	qs[0].waiters = make([]*waiter, 2)
	qs[1].executing = 1
	qs[3].waiters = make([]*waiter, 1)
	qs[3].executing = 2
	for _, tt := range []struct {
		hand []int
		want int
	}{
		{[]int{0, 1}, 1},
		{[]int{0, 3}, 0},
		{[]int{3, 2, 1}, 2},
	} {
		got := chooseQueue(qs, tt.hand)
		if got != qs[tt.want] {
			t.Errorf("hand %v: chose another queue than %d", tt.hand, tt.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name  string
		drops []int64 // unix seconds of drops, in order
		want  int64
	}{
		{"no drops", nil, 1},
		{"a few drops", []int64{10, 10, 11}, 1},
		// 3 drops in the second before: 3 ≥ 3×1, doubled.
		{"a burst doubles it", []int64{10, 10, 10, 11}, 2},
		// Doubled at most once per Retry-After: at 11, 13, 17, 25 and 41.
		{"a long burst keeps doubling up to 32", burst(10, 60, 40), 32},
		{"doubling waits out the current value", burst(10, 20, 40), 8},
		// After doubling to 2, a drop long after, with few drops in the
		// last 2 seconds, brings it down by one.
		{"quiet brings it down", []int64{10, 10, 10, 11, 30, 40}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRetryAfter()
			for _, d := range tt.drops {
				r.drop(d)
			}
			if r.seconds != tt.want {
				t.Errorf("Retry-After %d, want %d", r.seconds, tt.want)
			}
		})
	}
}

// burst is perSecond drops in each second of [from, to).
func burst(from, to int64, perSecond int) []int64 {
	var out []int64
	for s := from; s < to; s++ {
		for range perSecond {
			out = append(out, s)
		}
	}
	return out
}
