package chaos

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// Report is what a run measured and found.
type Report struct {
	Duration           time.Duration
	WritesAcknowledged int
	WritesUnknown      int
	// Faults counts each fault fired, by name (compaction included).
	Faults map[string]int
	// WatchRestarts counts watches started again after a stream ended;
	// Relists those that had to list again after a 410.
	WatchRestarts   int64
	Relists         int
	EventsDelivered int64
	Lost            int
	Duplicated      int
	Reordered       int
	// Diverged counts watchers whose state is not the fresh list's.
	Diverged int
	// PodCommand is the command line the agent's pods' processes start
	// with, unique to the run (so that a caller can look for leftovers).
	PodCommand string
	// PodProblems lists agent pods that ran twice, restarted or stopped.
	PodProblems []string
	Problems    []string
}

// OK reports whether nothing was lost, duplicated or reordered, every
// watcher converged and the agent's pods ran once throughout.
func (r *Report) OK() bool {
	return r.Lost == 0 && r.Duplicated == 0 && r.Reordered == 0 && r.Diverged == 0 && len(r.PodProblems) == 0
}

// Print writes the report as a table.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "duration                %s\n", r.Duration.Round(time.Second))
	fmt.Fprintf(w, "writes acknowledged     %d\n", r.WritesAcknowledged)
	fmt.Fprintf(w, "writes unknown          %d\n", r.WritesUnknown)
	names := make([]string, 0, len(r.Faults))
	total := 0
	for n, c := range r.Faults {
		names = append(names, n)
		total += c
	}
	sort.Strings(names)
	fmt.Fprintf(w, "faults fired            %d\n", total)
	for _, n := range names {
		fmt.Fprintf(w, "  %-21s %d\n", n, r.Faults[n])
	}
	fmt.Fprintf(w, "watch restarts          %d\n", r.WatchRestarts)
	fmt.Fprintf(w, "re-lists after 410      %d\n", r.Relists)
	fmt.Fprintf(w, "events delivered        %d\n", r.EventsDelivered)
	fmt.Fprintf(w, "lost                    %d\n", r.Lost)
	fmt.Fprintf(w, "duplicated              %d\n", r.Duplicated)
	fmt.Fprintf(w, "reordered               %d\n", r.Reordered)
	fmt.Fprintf(w, "watchers diverged       %d\n", r.Diverged)
	fmt.Fprintf(w, "agent pod problems      %d\n", len(r.PodProblems))
	for _, p := range r.PodProblems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	for i, p := range r.Problems {
		if i == 20 {
			fmt.Fprintf(w, "  ... %d more\n", len(r.Problems)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", p)
	}
}
