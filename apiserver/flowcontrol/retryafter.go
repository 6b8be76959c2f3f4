package flowcontrol

// maxRetryAfter bounds Retry-After, in seconds (upstream's 32).
const maxRetryAfter = 32

// retryAfter is the Retry-After of one priority level's rejections, as
// upstream's dropped-requests tracker: 1 s at first, doubled (up to 32 s)
// when at least 3×Retry-After requests were dropped within the last
// Retry-After seconds, and lowered by one when fewer than Retry-After were.
// The caller serializes the calls.
type retryAfter struct {
	seconds int64
	// updated is when seconds was last doubled (unix seconds).
	updated int64
	// history counts the drops of each past second, oldest first; now is
	// the second being counted.
	history []secondCount
	now     secondCount
}

type secondCount struct{ unix, drops int64 }

func newRetryAfter() *retryAfter { return &retryAfter{seconds: 1} }

// drop records a rejected request at unix second t.
func (r *retryAfter) drop(t int64) {
	if r.now.unix == t {
		r.now.drops++
		return
	}
	if r.now.drops > 0 {
		r.history = append(r.history, r.now)
	}
	r.now = secondCount{t, 1}
	keep := min(2*r.seconds, maxRetryAfter)
	i := 0
	for i < len(r.history) && t-r.history[i].unix > keep {
		i++
	}
	r.history = r.history[i:]

	var dropped int64
	for j := len(r.history) - 1; j >= 0 && t-r.history[j].unix <= r.seconds; j-- {
		dropped += r.history[j].drops
	}
	switch {
	case t-r.updated >= r.seconds && dropped >= 3*r.seconds:
		r.seconds = min(2*r.seconds, maxRetryAfter)
		r.updated = t
	case dropped < r.seconds && r.seconds > 1:
		r.seconds--
	}
}
