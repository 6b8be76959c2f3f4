package workload

import "time"

// Result is one workload's measurement.
type Result struct {
	// Name says what ran, e.g. "list all from cache (RV=0)".
	Name string `json:"name"`
	// Ops counts what Rate is a rate of: requests, or delivered events
	// for a watch fan-out.
	Ops int `json:"ops"`
	// Items is how many objects each op returned or the workload covered.
	Items int `json:"items,omitempty"`
	// Duration is the wall time of the whole workload.
	Duration time.Duration `json:"durationNs"`
	// Rate is Ops per second of Duration.
	Rate float64 `json:"ratePerSecond"`
	// P50 and P99 are per-op latencies: a request's round trip, or for a
	// watch, from the start of the write to the watcher's receipt.
	P50 time.Duration `json:"p50Ns"`
	P99 time.Duration `json:"p99Ns"`
	// Delivery, for a watch fan-out, sums every watcher's check.
	Delivery *Delivery `json:"delivery,omitempty"`
	// Note is anything else worth a line in the table.
	Note string `json:"note,omitempty"`
}

// Memory is what the server's /metrics said before the pods were created,
// after, and at the end (the lists, watches and informer done, the pods
// still stored), in bytes; a metric the server does not expose is 0. The
// end figures show what serving the pods added, such as encodings a server
// keeps for them.
type Memory struct {
	Pods       int     `json:"pods"`
	RSSBefore  float64 `json:"processResidentMemoryBytesBefore"`
	RSSAfter   float64 `json:"processResidentMemoryBytesAfter"`
	HeapBefore float64 `json:"goMemstatsHeapInuseBytesBefore"`
	HeapAfter  float64 `json:"goMemstatsHeapInuseBytesAfter"`
	RSSPerPod  float64 `json:"rssBytesPerPod"`
	HeapPerPod float64 `json:"heapInuseBytesPerPod"`
	// RSSPerPodSecondHalf and HeapPerPodSecondHalf, when the objects were
	// created in two halves, are the growth per object over the second
	// half: what one more object costs, without what the first creates
	// paid once.
	RSSPerPodSecondHalf  float64 `json:"rssBytesPerPodSecondHalf,omitempty"`
	HeapPerPodSecondHalf float64 `json:"heapInuseBytesPerPodSecondHalf,omitempty"`
	RSSEnd               float64 `json:"processResidentMemoryBytesEnd,omitempty"`
	HeapEnd              float64 `json:"goMemstatsHeapInuseBytesEnd,omitempty"`
	RSSEndPerPod         float64 `json:"rssBytesPerPodEnd,omitempty"`
	HeapEndPerPod        float64 `json:"heapInuseBytesPerPodEnd,omitempty"`
	NotExposedNote       string  `json:"note,omitempty"`
}

// Report is everything one Run measured.
type Report struct {
	// Title, when set, heads the table instead of the sizes in Options.
	Title       string   `json:"title,omitempty"`
	Server      string   `json:"server"`
	ContentType string   `json:"contentType"`
	Options     Settings `json:"options"`
	Results     []Result `json:"results"`
	Memory      *Memory  `json:"memory,omitempty"`
	// CustomResourceMemory, in a custom-resource comparison, is Memory's
	// figures for the custom resources (Memory's are the pods').
	CustomResourceMemory *Memory `json:"customResourceMemory,omitempty"`
	// Comparison, in a custom-resource comparison, sets each measure of
	// the custom resources against the same of the pods.
	Comparison []Comparison `json:"comparison,omitempty"`
	Started    time.Time    `json:"started"`
}

// Comparison is one measure of custom resources against built-in pods of
// the same size, in the same run.
type Comparison struct {
	Measure         string  `json:"measure"`
	Unit            string  `json:"unit,omitempty"`
	Pods            float64 `json:"pods"`
	CustomResources float64 `json:"customResources"`
	// Ratio is CustomResources / Pods (0 when Pods is 0).
	Ratio float64 `json:"ratio"`
	// Goal, if any, is the bound on Ratio (or on both figures).
	Goal string `json:"goal,omitempty"`
}

// Settings are the sizes a Report ran with.
type Settings struct {
	Namespace string `json:"namespace"`
	Pods      int    `json:"pods"`
	Nodes     int    `json:"nodes"`
	Writers   int    `json:"writers"`
	Watchers  int    `json:"watchers"`
	Updates   int    `json:"updates"`
	Repeats   int    `json:"repeats"`
	// Decode is how lists and fan-out watchers read responses.
	Decode Decode `json:"decode"`
}
