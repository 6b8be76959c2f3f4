package controller

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	type step func(e *Expectations, advance func(time.Duration))
	tests := []struct {
		name          string
		steps         []step
		wantSatisfied bool
	}{
		{"nothing expected", nil, true},
		{"creations not yet seen", []step{
			func(e *Expectations, _ func(time.Duration)) { e.Expect("k", 2, nil, nil); e.Created("k", "") },
		}, false},
		{"every creation seen", []step{
			func(e *Expectations, _ func(time.Duration)) {
				e.Expect("k", 2, nil, nil)
				e.Created("k", "")
				e.Created("k", "")
			},
		}, true},
		{"a named creation is seen by its name only", []step{
			func(e *Expectations, _ func(time.Duration)) {
				e.Expect("k", 0, []string{"1", "2"}, nil)
				e.Created("k", "1")
				e.Created("k", "3")
			},
		}, false},
		{"every named creation seen", []step{
			func(e *Expectations, _ func(time.Duration)) {
				e.Expect("k", 0, []string{"1", "2"}, nil)
				e.Created("k", "2")
				e.Created("k", "1")
			},
		}, true},
		{"deletions not yet seen", []step{
			func(e *Expectations, _ func(time.Duration)) {
				e.Expect("k", 0, nil, []string{"ns/a", "ns/b"})
				e.Deleted("k", "ns/a")
			},
		}, false},
		{"deletions seen", []step{
			func(e *Expectations, _ func(time.Duration)) {
				e.Expect("k", 0, nil, []string{"ns/a"})
				e.ExpectDeletions("k", "ns/b")
				e.Deleted("k", "ns/a")
				e.Deleted("k", "ns/b")
			},
		}, true},
		{"another key's observations do not count", []step{
			func(e *Expectations, _ func(time.Duration)) { e.Expect("k", 1, nil, nil); e.Created("other", "") },
		}, false},
		{"a creation never seen holds the key five minutes", []step{
			func(e *Expectations, advance func(time.Duration)) {
				e.Expect("k", 1, nil, nil)
				advance(ExpectationsTTL - time.Second)
			},
		}, false},
		{"then it expires", []step{
			func(e *Expectations, advance func(time.Duration)) {
				e.Expect("k", 1, nil, nil)
				advance(ExpectationsTTL + time.Second)
			},
		}, true},
		{"a deletion never seen expires too", []step{
			func(e *Expectations, advance func(time.Duration)) {
				e.ExpectDeletions("k", "ns/a")
				advance(ExpectationsTTL + time.Second)
			},
		}, true},
		{"new expectations after expiry hold the key again", []step{
			func(e *Expectations, advance func(time.Duration)) {
				e.Expect("k", 1, nil, nil)
				advance(ExpectationsTTL + time.Second)
				e.Expect("k", 1, nil, nil)
			},
		}, false},
		{"forgotten", []step{
			func(e *Expectations, _ func(time.Duration)) { e.Expect("k", 1, nil, nil); e.Forget("k") },
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1e9, 0)
			e := NewExpectations(func() time.Time { return now })
			for _, s := range tc.steps {
				s(e, func(d time.Duration) { now = now.Add(d) })
			}
			if got := e.Satisfied("k"); got != tc.wantSatisfied {
				t.Fatalf("Satisfied = %v, want %v", got, tc.wantSatisfied)
			}
			if wait := e.Expiry("k"); (wait == 0) != tc.wantSatisfied {
				t.Fatalf("Expiry = %v, want 0 exactly when satisfied", wait)
			}
		})
	}
}
