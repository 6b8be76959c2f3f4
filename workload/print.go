package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the report as indented JSON; durations are in
// nanoseconds.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as an aligned table, one workload a row,
// then the memory figures.
func WriteTable(w io.Writer, r *Report) error {
	if o := r.Options; r.Title != "" {
		fmt.Fprintf(w, "%s\n\n", r.Title)
	} else {
		fmt.Fprintf(w, "server %s, %s; %d pods on %d nodes, %d writers, %d watchers (decode %s), %d updates, namespace %s\n\n",
			r.Server, r.ContentType, o.Pods, o.Nodes, o.Writers, o.Watchers, o.Decode, o.Updates, o.Namespace)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tOPS\tITEMS\tTIME\tRATE/s\tP50\tP99\tLOST\tNOTE")
	for _, res := range r.Results {
		lost := "-"
		if res.Delivery != nil {
			lost = strconv.Itoa(res.Delivery.Lost)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.1f\t%s\t%s\t%s\t%s\n",
			res.Name, res.Ops, res.Items, duration(res.Duration), res.Rate, duration(res.P50), duration(res.P99), lost, res.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeMemory(w, r.Memory, "pods")
	writeMemory(w, r.CustomResourceMemory, "custom resources")
	if len(r.Comparison) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "custom resources against pods of the same size, same run (ratio = custom resources / pods):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "MEASURE\tPODS\tCUSTOM RESOURCES\tRATIO\tGOAL")
		for _, c := range r.Comparison {
			ratio := "-"
			if c.Pods != 0 {
				ratio = fmt.Sprintf("%.2fx", c.Ratio)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Measure, figure(c.Pods, c.Unit), figure(c.CustomResources, c.Unit), ratio, c.Goal)
		}
		return tw.Flush()
	}
	return nil
}

// figure is v with its unit, rounded for the table.
func figure(v float64, unit string) string {
	switch {
	case unit == "ms" && v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case unit == "ms":
		return fmt.Sprintf("%.1f ms", v)
	case unit == "":
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

// writeMemory writes the memory figures of what objects are stored.
func writeMemory(w io.Writer, m *Memory, what string) {
	if m != nil {
		fmt.Fprintln(w)
		if m.RSSAfter > 0 || m.HeapAfter > 0 {
			fmt.Fprintf(w, "server memory, %d %s stored (from /metrics before and after the creates):\n", m.Pods, what)
			fmt.Fprintf(w, "  %s: %s -> %s, %.0f B/object\n", rssMetric, mib(m.RSSBefore), mib(m.RSSAfter), m.RSSPerPod)
			fmt.Fprintf(w, "  %s: %s -> %s, %.0f B/object\n", heapMetric, mib(m.HeapBefore), mib(m.HeapAfter), m.HeapPerPod)
		}
		if m.RSSPerPodSecondHalf != 0 || m.HeapPerPodSecondHalf != 0 {
			fmt.Fprintf(w, "  over the second half of the creates: %.0f B/object RSS, %.0f B/object heap in use\n", m.RSSPerPodSecondHalf, m.HeapPerPodSecondHalf)
		}
		if m.RSSEnd > 0 || m.HeapEnd > 0 {
			fmt.Fprintf(w, "at the end (lists, watches and informer done, %s still stored):\n", what)
			fmt.Fprintf(w, "  %s: %s, %.0f B/object\n", rssMetric, mib(m.RSSEnd), m.RSSEndPerPod)
			fmt.Fprintf(w, "  %s: %s, %.0f B/object\n", heapMetric, mib(m.HeapEnd), m.HeapEndPerPod)
		}
		if m.NotExposedNote != "" {
			fmt.Fprintf(w, "server memory of %s: %s\n", what, m.NotExposedNote)
		}
	}
}

// duration rounds d to three or four significant digits.
func duration(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
