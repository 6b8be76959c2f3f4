package chaos

import (
	"errors"
	"io"
	"time"
)

// Options configure a run.
type Options struct {
	// Binary is the kite binary that runs etcd, the API server and the
	// agent. Required.
	Binary string
	// Dir holds the processes' data and logs. Required.
	Dir string
	// Duration is how long writers and watchers run under faults.
	Duration time.Duration
	// FaultInterval is the time between two faults; they fire in turn:
	// cut, apiserver, etcd, agent, stalled client, etcd and apiserver.
	FaultInterval time.Duration
	Writers       int
	Watchers      int
	// Groups is how many label selectors the watchers split over: each
	// object carries one group, each watcher watches one.
	Groups int
	// Pods is how many pods run on the agent's node through the faults.
	Pods int
	// WritePause is each writer's pause between writes.
	WritePause time.Duration
	// Log gets progress lines; nil discards them.
	Log io.Writer
}

func (o *Options) complete() error {
	if o.Binary == "" || o.Dir == "" {
		return errors.New("chaos: Binary and Dir are required")
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Minute
	}
	if o.FaultInterval <= 0 {
		o.FaultInterval = 10 * time.Second
	}
	if o.Writers <= 0 {
		o.Writers = 16
	}
	if o.Watchers <= 0 {
		o.Watchers = 1000
	}
	if o.Groups <= 0 {
		o.Groups = 8
	}
	if o.Pods <= 0 {
		o.Pods = 3
	}
	if o.WritePause == 0 {
		o.WritePause = 20 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}
