package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// requestCounts reads the API server's apiserver_request_total and sums it
// by "VERB resource[/subresource] code": the requests every client made
// (the controllers under test, the scheduler, the hollow kubelets and this
// program's own polls). A phase's delta says how many requests each side's
// controllers needed for the same work.
func (b *bench) requestCounts(ctx context.Context) (map[string]float64, error) {
	raw, err := b.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read /metrics: %w", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		lbls, val, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(lbls, ",") {
			k, val, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(val, `"`)
		}
		res := l["resource"]
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		out[l["verb"]+" "+res+" "+l["code"]] += v
	}
	return out, nil
}

// phase runs f and records the requests made meanwhile under name (when
// /metrics can be read: a failure to read it only loses the counts).
func (b *bench) phase(ctx context.Context, name string, f func() error) error {
	before, berr := b.requestCounts(ctx)
	if err := f(); err != nil {
		return err
	}
	after, aerr := b.requestCounts(ctx)
	if berr == nil && aerr == nil {
		b.record(name, before, after)
	}
	return nil
}

func (b *bench) record(name string, before, after map[string]float64) {
	d := map[string]float64{}
	for k, v := range after {
		if v-before[k] > 0 {
			d[k] = v - before[k]
		}
	}
	if b.r.Requests == nil {
		b.r.Requests = map[string]map[string]float64{}
	}
	b.r.Requests[name] = d
}
