package podactions

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Crash-loop back-off, as the kubelet's (newCrashLoopBackOff,
// MaxContainerBackOff): 10 s doubling to 5 min; an entry is forgotten once
// the container ran for more than 10 min before its last exit.
const (
	BackOffInitial = 10 * time.Second
	BackOffMax     = 300 * time.Second
	BackOffReset   = 600 * time.Second
)

// BackOff is the crash-loop back-off of one pod's containers, client-go's
// flowcontrol.Backoff with the kubelet's expiry, as a value: its owner (the
// pod's worker) passes the time in. The zero value is ready to use, with
// the defaults.
type BackOff struct {
	Initial, Max time.Duration
	entries      map[string]backOffEntry
}

type backOffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

// Key is the back-off key of a container of a pod: a new image or new
// resources start afresh, as upstream's getStableKey.
func Key(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s_%s_%v", pod.Name, pod.Namespace, pod.UID, c.Name, c.Image, c.Resources.String())
}

// Check says whether the container whose last instance finished at
// finishedAt must still wait, and how long. When it need not, the start is
// recorded and the next wait grows (the first restart is immediate).
func (b *BackOff) Check(key string, finishedAt, now time.Time) (wait time.Duration, blocked bool) {
	initial, max := b.Initial, b.Max
	if initial == 0 {
		initial = BackOffInitial
	}
	if max == 0 {
		max = BackOffMax
	}
	if initial > max {
		initial = max
	}
	if b.entries == nil {
		b.entries = map[string]backOffEntry{}
	}
	e, ok := b.entries[key]
	expired := ok && finishedAt.Sub(e.lastUpdate) > BackOffReset
	if ok && !expired {
		if d := now.Sub(finishedAt); d < e.delay {
			return e.delay - d, true
		}
	}
	if !ok || expired {
		e.delay = initial
	} else {
		e.delay = min(2*e.delay, max)
	}
	e.lastUpdate = now
	b.entries[key] = e
	return 0, false
}

// Delay is the current back-off of key: what a container blocked now
// waits in all (for the message "back-off 20s restarting ...").
func (b *BackOff) Delay(key string) time.Duration { return b.entries[key].delay }

// Forget drops every entry not in keep, so that the back-off of removed
// containers does not pile up.
func (b *BackOff) Forget(keep map[string]bool) {
	for k := range b.entries {
		if !keep[k] {
			delete(b.entries, k)
		}
	}
}
