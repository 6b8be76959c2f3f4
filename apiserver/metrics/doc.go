// Package metrics holds the API server's Prometheus metrics under
// kube-apiserver's names, labels and buckets, in a registry of its own (no
// process-global registry, so two servers in one process or parallel tests
// never share counters).
//
//	apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}
//	apiserver_request_duration_seconds{verb,dry_run,group,version,resource,subresource,scope,component}
//	apiserver_longrunning_requests{verb,group,version,resource,subresource,scope,component}
//	apiserver_current_inflight_requests{request_kind="readOnly"|"mutating"}
//	apiserver_watch_events_total, apiserver_watch_events_sizes{group,version,resource}
//	apiserver_resource_objects{group,resource}, apiserver_storage_objects{resource} (deprecated upstream, kept for dashboards)
//	etcd_request_duration_seconds, etcd_requests_total, etcd_request_errors_total{operation,group,resource}
//
// Help texts carry upstream's stability prefix ("[STABLE] ...").
//
// How the apiserver wires it:
//
//	m := metrics.New(metrics.Options{})                 // one per server
//	mux.Handle("/metrics", m.Handler())
//	handler = m.TrackInflight(handler, isLongRunning)    // outermost, after authn
//	// per resource request, once routing has found what it is:
//	m.Instrument(metrics.Request{Verb: "list", Version: "v1", Resource: "pods", Namespace: ns}, h).ServeHTTP(w, r)
//	// from the watch handler, once per watch:      rec := m.WatchEvents("", "v1", "pods")
//	// and per event written:                     rec.Record(len(frame))
//	// from the etcd store, per call:              m.EtcdRequest("get", "", "pods", start, err)
//	// from the watch cache, on change:            m.SetObjectCount("", "pods", n)
package metrics
