package podactions

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Image pull reasons and back-off, as the kubelet's image manager
// (pkg/kubelet/images): the Waiting reasons of a container whose image
// is not there, and 10 s doubling to 5 min between pulls of one image for
// one pod (imageBackOffPeriod, MaxImageBackOff).
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	ReasonImageInspectError = "ImageInspectError"

	ImageBackOffInitial = 10 * time.Second
	ImageBackOffMax     = 300 * time.Second
)

// ImageAction is what to do about a container's image before it starts.
type ImageAction int

const (
	// UsePresent: the image is there and the policy does not ask for a pull.
	UsePresent ImageAction = iota
	// Pull it.
	Pull
	// NeverPull: it is missing and the policy forbids pulling
	// (ErrImageNeverPull).
	NeverPull
)

// ImageDecision is the kubelet's imagePullPrecheck: Always pulls; IfNotPresent
// pulls what is missing; Never uses what is there or fails. (The policy
// itself defaults from the tag when the pod is created: Always for
// :latest or no tag, else IfNotPresent.)
func ImageDecision(policy v1.PullPolicy, present bool) ImageAction {
	switch {
	case policy == v1.PullAlways:
		return Pull
	case present:
		return UsePresent
	case policy == v1.PullNever:
		return NeverPull
	default:
		return Pull
	}
}

// ImageBackOff is the pull back-off, client-go's flowcontrol.Backoff as the
// image manager uses it, as a value: its owner passes the time in. The zero
// value has the kubelet's defaults.
type ImageBackOff struct {
	Initial, Max time.Duration
	entries      map[string]backOffEntry
}

// ImageKey is the back-off key of an image for a pod, upstream's.
func ImageKey(pod *v1.Pod, image string) string { return string(pod.UID) + "_" + image }

// InBackOff says whether a pull of key failed less than its delay ago
// (IsInBackOffSinceUpdate).
func (b *ImageBackOff) InBackOff(key string, now time.Time) bool {
	e, ok := b.entries[key]
	return ok && now.Sub(e.lastUpdate) < e.delay
}

// Failed records a failed pull at now: the first waits Initial, each
// next one twice the last, up to Max; an entry idle for twice Max starts
// afresh (Next).
func (b *ImageBackOff) Failed(key string, now time.Time) {
	initial, max := b.Initial, b.Max
	if initial == 0 {
		initial = ImageBackOffInitial
	}
	if max == 0 {
		max = ImageBackOffMax
	}
	if b.entries == nil {
		b.entries = map[string]backOffEntry{}
	}
	e, ok := b.entries[key]
	if !ok || now.Sub(e.lastUpdate) > 2*max {
		e.delay = initial
	} else {
		e.delay = min(2*e.delay, max)
	}
	e.lastUpdate = now
	b.entries[key] = e
}

// Succeeded forgets key.
func (b *ImageBackOff) Succeeded(key string) { delete(b.entries, key) }
