package workload

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultDeliveryTimeout is Options.DeliveryTimeout's default.
const DefaultDeliveryTimeout = 2 * time.Minute

// Options size the workloads. The zero value of a field means its default.
type Options struct {
	// Namespace is where the pods go. Run creates it (it must not exist)
	// and deletes it afterwards; "" means a generated "kite-bench-" name.
	Namespace string
	// Pods is how many pods to create (default 10000).
	Pods int
	// Nodes is how many node names the pods are spread over, round robin
	// (default 100). No Node objects are created: spec.nodeName is set at
	// create, as a scheduler's binding would.
	Nodes int
	// Writers is how many clients create and update concurrently
	// (default 16).
	Writers int
	// Watchers is how many watches each fan-out workload opens
	// (default 500).
	Watchers int
	// Updates is how many pods each fan-out workload updates while the
	// watchers watch (default 500; at most Pods).
	Updates int
	// Repeats is how often each list and the informer sync run, for
	// their percentiles (default 5).
	Repeats int
	// DeliveryTimeout bounds how long watchers wait for their events
	// after the last update was acknowledged (default 2 minutes); what
	// has not arrived by then counts as lost.
	DeliveryTimeout time.Duration
	// Decode is how lists and fan-out watchers read the server's answers
	// (default RawDecode). The informer sync always decodes in full: it
	// is client-go's informer.
	Decode Decode
	// Log, if set, gets one line as each workload starts.
	Log io.Writer
}

// Decode is how the bench client reads list responses and watch events.
type Decode string

const (
	// RawDecode reads list bodies and watch frames and decodes only what
	// the checks need: of a list its items' names and the continue token,
	// of a watch event its type and the pod's namespace, resourceVersion
	// and sent annotation. The bench client shares the machine with the
	// server; decoding every pod in full would make the figures measure
	// the client's decoder.
	RawDecode Decode = "raw"
	// ClientGoDecode lists and watches with client-go's typed client,
	// which decodes every pod into a *v1.Pod, as a controller does.
	ClientGoDecode Decode = "client-go"
)

// Valid reports whether d is one of the modes.
func (d Decode) Valid() bool { return d == RawDecode || d == ClientGoDecode }

// withDefaults fills the zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Pods, 10000)
	def(&o.Nodes, 100)
	def(&o.Writers, 16)
	def(&o.Watchers, 500)
	def(&o.Updates, 500)
	def(&o.Repeats, 5)
	if o.DeliveryTimeout == 0 {
		o.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if o.Decode == "" {
		o.Decode = RawDecode
	}
	if !o.Decode.Valid() {
		return o, fmt.Errorf("workload: decode %q: want %q or %q", o.Decode, RawDecode, ClientGoDecode)
	}
	if o.Pods < 0 || o.Nodes < 0 || o.Writers < 0 || o.Watchers < 0 || o.Updates < 0 || o.Repeats < 0 {
		return o, errors.New("workload: sizes must not be negative")
	}
	if o.Updates > o.Pods {
		return o, fmt.Errorf("workload: %d updates need at least as many pods, have %d", o.Updates, o.Pods)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o, nil
}

// nodeName is the node of pod i.
func (o Options) nodeName(i int) string { return fmt.Sprintf("%s-node-%03d", o.Namespace, i%o.Nodes) }

// podName is the name of pod i.
func podName(i int) string { return fmt.Sprintf("bench-%05d", i) }

// podsOnNode is how many of the pods are on node n.
func (o Options) podsOnNode(n int) int {
	c := o.Pods / o.Nodes
	if n < o.Pods%o.Nodes {
		c++
	}
	return c
}

// ready is withDefaults for the workloads that run in a namespace that
// already exists.
func (o Options) ready() (Options, error) {
	o, err := o.withDefaults()
	if err == nil && o.Namespace == "" {
		err = errors.New("workload: no namespace")
	}
	return o, err
}
