package flowcontrol

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

// tracked is what the debug dumps show of one request, as upstream's
// debug.RequestDump.
type tracked struct {
	flowSchema, distinguisher string
	arrive, start             time.Time
	we                        workEstimate
	user                      string
	info                      *genericapirequest.RequestInfo
	// queue is the index of the queue it left to run, -1 when it ran
	// without waiting in one.
	queue int
	// prev and next link it into its level's executing requests.
	prev, next *tracked
}

// trackedList is a level's executing requests in the order they started:
// a linked list through the requests themselves, so that a request
// allocates nothing more to be listed and leaves in constant time.
type trackedList struct {
	head, tail *tracked
	n          int
}

func (l *trackedList) add(r *tracked) {
	r.prev, r.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = r
	} else {
		l.head = r
	}
	l.tail = r
	l.n++
}

func (l *trackedList) remove(r *tracked) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		l.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		l.tail = r.prev
	}
	r.prev, r.next = nil, nil
	l.n--
}

// DebugPrefix is where the debug endpoints are served, as upstream's.
const DebugPrefix = "/debug/api_priority_and_fairness/"

// DebugHandler serves upstream's API priority and fairness debug
// endpoints (k8s.io/apiserver/pkg/util/flowcontrol's
// apf_controller_debug.go), with their columns and format: comma- and
// tab-separated rows of a tabwriter. dump_priority_levels has a row per
// priority level, dump_queues one per queue, dump_requests one per
// waiting or executing request (with ?includeRequestDetails=1 the user and
// the request's attributes too). They are non-resource URLs: the server's
// authorization decides who reads them (get), as upstream's.
func (c *Controller) DebugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var dump func(io.Writer, *http.Request)
		switch strings.TrimPrefix(r.URL.Path, DebugPrefix) {
		case "dump_priority_levels":
			dump = c.dispatch.dumpPriorityLevels
		case "dump_queues":
			dump = c.dispatch.dumpQueues
		case "dump_requests":
			dump = c.dispatch.dumpRequests
		default:
			http.NotFound(w, r)
			return
		}
		tw := tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)
		dump(tw, r)
		if err := tw.Flush(); err != nil {
			klog.FromContext(r.Context()).V(2).Info("Writing an APF debug dump failed", "path", r.URL.Path, "err", err)
		}
	})
}

// row is upstream's: columns joined by ",\t", one line.
func row(w io.Writer, columns ...string) {
	fmt.Fprint(w, strings.Join(columns, ",\t"))
}

func (d *dispatcher) sortedLevelsLocked() []string {
	names := make([]string, 0, len(d.levels))
	for name := range d.levels {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (d *dispatcher) dumpPriorityLevels(w io.Writer, _ *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	row(w, "PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests",
		"DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests")
	fmt.Fprint(w, "\n")
	for _, name := range d.sortedLevelsLocked() {
		l := d.levels[name]
		active := 0
		for _, q := range l.queues {
			if len(q.waiters) > 0 {
				active++
			}
		}
		row(w, name, strconv.Itoa(active), strconv.FormatBool(l.waiting == 0 && l.executing.n == 0),
			strconv.FormatBool(l.removed), strconv.Itoa(l.waiting), strconv.Itoa(l.executing.n),
			strconv.Itoa(l.dispatched), strconv.Itoa(l.rejected), strconv.Itoa(l.timedout), strconv.Itoa(l.cancelled))
		fmt.Fprint(w, "\n")
	}
}

// seatSeconds formats virtual time as upstream's SeatSeconds.String.
func seatSeconds(v float64) string { return fmt.Sprintf("%.8fss", v) }

func (d *dispatcher) dumpQueues(w io.Writer, _ *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	row(w, "PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse", "NextDispatchR",
		"InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum")
	fmt.Fprint(w, "\n")
	for _, name := range d.sortedLevelsLocked() {
		l := d.levels[name]
		executing := make([]int, len(l.queues))
		for r := l.executing.head; r != nil; r = r.next {
			if r.queue >= 0 && r.queue < len(executing) {
				executing[r.queue]++
			}
		}
		for i, q := range l.queues {
			var initial, maxSeats int
			for _, wt := range q.waiters {
				initial += wt.width
				maxSeats += wt.width
			}
			// Kite's virtual time counts a request's seats once each
			// (dispatch.go), so a queue's work is its seats.
			row(w, name, strconv.Itoa(i), strconv.Itoa(len(q.waiters)), strconv.Itoa(executing[i]), strconv.Itoa(q.executing),
				seatSeconds(q.start), strconv.Itoa(initial), strconv.Itoa(maxSeats), seatSeconds(float64(initial)))
			fmt.Fprint(w, "\n")
		}
	}
}

func (d *dispatcher) dumpRequests(w io.Writer, r *http.Request) {
	details := r.URL.Query().Get("includeRequestDetails") != ""
	d.mu.Lock()
	defer d.mu.Unlock()
	row(w, "PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher", "ArriveTime",
		"InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime")
	if details {
		fmt.Fprint(w, ",\t")
		row(w, "UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource")
	}
	fmt.Fprint(w, "\n")
	for _, name := range d.sortedLevelsLocked() {
		l := d.levels[name]
		for iq, q := range l.queues {
			for ir, wt := range q.waiters {
				if wt.req != nil {
					dumpRequest(w, name, iq, ir, wt.req, details)
				}
			}
		}
		for r := l.executing.head; r != nil; r = r.next {
			dumpRequest(w, name, r.queue, -1, r, details)
		}
	}
}

// dumpRequest writes one request's row: a waiting one with its index in
// its queue, an executing one with -1 there (and -1 as its queue when it
// ran without waiting in one, as upstream's queueless requests).
func dumpRequest(w io.Writer, level string, queue, index int, r *tracked, details bool) {
	final := 0
	if r.we.additionalLatency > 0 {
		final = max(1, r.we.seats) // held through the additional latency
	}
	row(w, level, r.flowSchema, strconv.Itoa(queue), strconv.Itoa(index), r.distinguisher,
		r.arrive.UTC().Format(time.RFC3339Nano), strconv.Itoa(max(1, r.we.seats)), strconv.Itoa(final),
		r.we.additionalLatency.String(), r.start.UTC().Format(time.RFC3339Nano))
	if details {
		fmt.Fprint(w, ",\t")
		var info genericapirequest.RequestInfo
		if r.info != nil {
			info = *r.info
		}
		row(w, r.user, info.Verb, info.Path, info.Namespace, info.Name,
			runtimeschema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}.String(), info.Resource, info.Subresource)
	}
	fmt.Fprint(w, "\n")
}
