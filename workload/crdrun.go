package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// crdTimeout bounds waiting for the CRD to be served; crdCleanupTimeout
// for it and its custom resources to be gone.
const (
	crdTimeout        = time.Minute
	crdCleanupTimeout = 5 * time.Minute
)

// objects is a resource the custom-resource comparison writes, lists and
// watches. Pods and BenchPods go through the same raw requests (JSON
// bodies in, bodies read but decoded only as far as the checks need), so
// that the client costs the same for both and the difference is the
// server's.
type objects struct {
	what     string         // "pods", "custom resources"
	rest     rest.Interface // a REST client of the resource's group version, JSON
	resource string
	body     func(i int) ([]byte, error) // JSON of object i
}

func (o objects) lister() rawLister {
	return rawLister{rest: o.rest, resource: o.resource, bodies: &sync.Pool{}}
}

// RunCustomResources compares a custom resource with a built-in pod of the
// same size on the server of cfg, in one run: it installs the BenchPod
// CRD (a structural schema of the bench pod's fields), and in a namespace
// of its own creates opts.Pods pods and as many BenchPods, reading the
// server's memory around each batch; lists each from cache (RV=0),
// alternating, opts.Repeats times; fans updates out to opts.Watchers
// watchers of each; and returns the figures with the custom resource's
// ratio to the pod's. Everything goes as JSON (custom resources have no
// protobuf), with raw decoding. The CRD, the objects and the namespace are
// deleted afterwards. The CRD must not exist beforehand.
func RunCustomResources(ctx context.Context, cfg *rest.Config, opts Options, crsFirst bool) (_ *Report, err error) {
	if opts.Decode == ClientGoDecode {
		return nil, errors.New("workload: the custom-resource comparison reads responses raw only (client-go has no typed client for them)")
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	client, crClient, err := comparisonClients(cfg)
	if err != nil {
		return nil, err
	}
	report := &Report{Server: cfg.Host, ContentType: "application/json", Started: time.Now()}

	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace}}
	if ns.Name == "" {
		ns.GenerateName = "kite-bench-crd-"
	}
	fmt.Fprintf(opts.Log, "kite bench crd: create namespace %s%s\n", ns.Name, ns.GenerateName)
	if ns, err = client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("workload: create namespace: %w", err)
	}
	opts.Namespace = ns.Name
	report.Options = Settings{
		Namespace: opts.Namespace, Pods: opts.Pods, Nodes: opts.Nodes, Writers: opts.Writers,
		Watchers: opts.Watchers, Updates: opts.Updates, Repeats: opts.Repeats, Decode: opts.Decode,
	}
	report.Title = fmt.Sprintf("server %s, %s; %d pods and %d custom resources (%s) of the same size on %d nodes, %d writers, %d watchers, %d updates, %d lists each, namespace %s",
		report.Server, report.ContentType, opts.Pods, opts.Pods, benchPodCRDName(), opts.Nodes, opts.Writers, opts.Watchers, opts.Updates, opts.Repeats, opts.Namespace)
	installed := false
	defer func() {
		// Clean up also after a failure or an interrupt, each step on a
		// context of its own.
		var rs []Result
		var cerrs []error
		if installed {
			fmt.Fprintf(opts.Log, "kite bench crd: delete CRD %s and its custom resources\n", benchPodCRDName())
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), crdCleanupTimeout)
			r, cerr := deleteCustomResources(cctx, client, opts)
			cancel()
			rs, cerrs = append(rs, r), append(cerrs, cerr)
		}
		fmt.Fprintf(opts.Log, "kite bench crd: delete namespace %s\n", opts.Namespace)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		r, cerr := cleanup(cctx, client, opts)
		cancel()
		rs, cerrs = append(rs, r), append(cerrs, cerr)
		cerr = errors.Join(cerrs...)
		if err == nil && cerr == nil {
			report.Results = append(report.Results, rs...)
		}
		err = errors.Join(err, cerr)
	}()

	fmt.Fprintf(opts.Log, "kite bench crd: install CRD %s\n", benchPodCRDName())
	installed, err = installBenchPodCRD(ctx, client, crClient, opts.Namespace)
	if err != nil {
		return report, err
	}

	pods := objects{what: "pods", rest: client.CoreV1().RESTClient(), resource: "pods", body: opts.podJSONBody}
	crs := objects{what: "custom resources", rest: crClient, resource: benchPods.Resource, body: opts.benchPodJSON}
	order := []objects{pods, crs}
	if crsFirst {
		order = []objects{crs, pods}
	}
	memory := map[string]*Memory{}
	creates := map[string]Result{}
	for _, o := range order {
		fmt.Fprintf(opts.Log, "kite bench crd: create %s\n", o.what)
		r, m, err := createMeasured(ctx, client, o, opts)
		if err != nil {
			return report, err
		}
		creates[o.what], memory[o.what] = r, m
		report.Results = append(report.Results, r)
	}
	report.Memory, report.CustomResourceMemory = memory["pods"], memory["custom resources"]

	fmt.Fprintln(opts.Log, "kite bench crd: list all from cache, alternating")
	lists, sizes, err := listAlternating(ctx, order, opts)
	if err != nil {
		return report, err
	}
	report.Results = append(report.Results, lists[order[0].what], lists[order[1].what])

	fanOuts := map[string]Result{}
	for _, o := range order {
		fmt.Fprintf(opts.Log, "kite bench crd: watch fan-out of %s\n", o.what)
		r, err := fanOut(ctx, o.fanOutTarget(opts), opts, AllNamespaces, o.what)
		if err != nil {
			return report, fmt.Errorf("%s: %w", o.what, err)
		}
		fanOuts[o.what] = r
		report.Results = append(report.Results, r)
	}

	report.Comparison = compare(creates, lists, fanOuts, sizes, memory, opts.Pods)
	return report, nil
}

// comparisonClients are the clients of the comparison: JSON, without
// client-side rate limits; crClient is a REST client of BenchPods' group
// version.
func comparisonClients(cfg *rest.Config) (client kubernetes.Interface, crClient rest.Interface, err error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	if client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, nil, fmt.Errorf("workload: client: %w", err)
	}
	crCfg := rest.CopyConfig(cfg)
	crCfg.GroupVersion = new(benchPods.GroupVersion())
	crCfg.APIPath = "/apis"
	crCfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	if crClient, err = rest.RESTClientFor(crCfg); err != nil {
		return nil, nil, fmt.Errorf("workload: custom resource client: %w", err)
	}
	return client, crClient, nil
}

// installBenchPodCRD creates the BenchPod CRD and waits until BenchPods can
// be listed in namespace. It reports whether it created the CRD (and must
// delete it), also when the wait then failed.
func installBenchPodCRD(ctx context.Context, client kubernetes.Interface, crClient rest.Interface, namespace string) (bool, error) {
	body, err := json.Marshal(benchPodCRD())
	if err != nil {
		return false, err
	}
	crds := client.CoreV1().RESTClient().Post().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
	if err := crds.Body(body).Do(ctx).Error(); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("workload: CRD %s exists (from an earlier run?); delete it first: %w", benchPodCRDName(), err)
		}
		return false, fmt.Errorf("workload: create CRD %s: %w", benchPodCRDName(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, crdTimeout)
	defer cancel()
	for {
		// Established, and its routes in place: a list answers.
		err := crClient.Get().Namespace(namespace).Resource(benchPods.Resource).Param("limit", "1").Do(ctx).Error()
		if err == nil {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return true, fmt.Errorf("workload: CRD %s not served after %s: %w", benchPodCRDName(), crdTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// deleteCustomResources deletes the CRD and waits until it is gone: the
// server deletes its custom resources first (the CRD's cleanup
// finalizer). One request that deletes them all (deletecollection) may
// outlast the server's request timeout at 10 000 objects.
func deleteCustomResources(ctx context.Context, client kubernetes.Interface, opts Options) (Result, error) {
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	start := time.Now()
	if err := client.CoreV1().RESTClient().Delete().AbsPath(crds, benchPodCRDName()).Do(ctx).Error(); err != nil && !apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("workload: delete CRD %s: %w", benchPodCRDName(), err)
	}
	for {
		err := client.CoreV1().RESTClient().Get().AbsPath(crds, benchPodCRDName()).Do(ctx).Error()
		if apierrors.IsNotFound(err) {
			break
		}
		select {
		case <-ctx.Done():
			return Result{}, fmt.Errorf("workload: CRD %s still there after %s: %w", benchPodCRDName(), time.Since(start).Round(time.Second), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	elapsed := time.Since(start)
	return Result{
		Name: "delete the CRD until gone (its custom resources first)", Ops: 1, Items: opts.Pods,
		Duration: elapsed, Rate: rate(opts.Pods, elapsed), P50: elapsed, P99: elapsed, Note: "rate is objects/s",
	}, nil
}

// createMeasured creates o's opts.Pods objects in two halves and reads the
// server's memory, each time after a garbage collection, before, between
// and after them. The Memory's per-object figures are the growth over all
// the creates, and over the second half alone: what one more object
// costs, without what the first creates paid once (pools, buffers and
// caches grown to size).
func createMeasured(ctx context.Context, client kubernetes.Interface, o objects, opts Options) (Result, *Memory, error) {
	var rss, heap [3]float64
	var memErr, gcErr error
	scrape := func(k int) {
		if memErr != nil {
			return
		}
		if err := collectGarbage(ctx, client); err != nil && gcErr == nil {
			gcErr = err
		}
		rss[k], heap[k], memErr = scrapeMemory(ctx, client)
	}
	half := opts.Pods / 2
	scrape(0)
	lat, elapsed, err := createObjects(ctx, o, opts, 0, half)
	if err != nil {
		return Result{}, nil, err
	}
	scrape(1)
	lat2, elapsed2, err := createObjects(ctx, o, opts, half, opts.Pods)
	if err != nil {
		return Result{}, nil, err
	}
	scrape(2)
	lat, elapsed = append(lat, lat2...), elapsed+elapsed2
	r := Result{
		Name: fmt.Sprintf("create %s (%d writers)", o.what, opts.Writers),
		Ops:  opts.Pods, Items: opts.Pods, Duration: elapsed, Rate: rate(opts.Pods, elapsed),
		Note: "in two halves, the server's memory read around each",
	}
	lat.fill(&r)
	if memErr != nil {
		return r, &Memory{Pods: opts.Pods, NotExposedNote: memErr.Error()}, nil
	}
	m := memoryDelta(opts.Pods, rss[0], heap[0], rss[2], heap[2])
	if n := float64(opts.Pods - half); n > 0 {
		m.RSSPerPodSecondHalf = (rss[2] - rss[1]) / n
		m.HeapPerPodSecondHalf = (heap[2] - heap[1]) / n
	}
	if gcErr != nil {
		m.NotExposedNote = strings.TrimPrefix(m.NotExposedNote+"; ", "; ") + "no garbage collection before the scrapes: " + gcErr.Error()
	}
	return r, m, nil
}

// createObjects creates objects from to to of o from opts.Writers
// clients; each create sends the object's JSON and reads the answer
// without decoding it.
func createObjects(ctx context.Context, o objects, opts Options, from, to int) (latencies, time.Duration, error) {
	return parallel(ctx, to-from, opts.Writers, func(ctx context.Context, i int) error {
		body, err := o.body(from + i)
		if err != nil {
			return err
		}
		if err := o.rest.Post().Namespace(opts.Namespace).Resource(o.resource).Body(body).Do(ctx).Error(); err != nil {
			return fmt.Errorf("create %s %d: %w", o.what, from+i, err)
		}
		return nil
	})
}

// listAlternating lists every object of each kind from cache (RV=0),
// opts.Repeats times, one kind after the other in turn, so that a change
// in the machine's load hits both; each list must return every object. It
// also returns each kind's list body size per item.
func listAlternating(ctx context.Context, kinds []objects, opts Options) (map[string]Result, map[string]float64, error) {
	lat := map[string]latencies{}
	total := map[string]time.Duration{}
	sizes := map[string]float64{}
	// One lister per kind, whose pool keeps the body buffer from list to
	// list (see rawLister.bodies).
	listers := map[string]rawLister{}
	for _, o := range kinds {
		listers[o.what] = o.lister()
		// A consistent list first (untimed): the RV=0 lists after it
		// see every object (see catchUp).
		if _, err := listers[o.what].list(ctx, opts.Namespace, metav1.ListOptions{}); err != nil {
			return nil, nil, fmt.Errorf("list %s: consistent list before timing: %w", o.what, err)
		}
	}
	for range opts.Repeats {
		for _, o := range kinds {
			t := time.Now()
			p, err := listers[o.what].list(ctx, opts.Namespace, metav1.ListOptions{ResourceVersion: "0"})
			d := time.Since(t)
			if err != nil {
				return nil, nil, fmt.Errorf("list %s from cache: %w", o.what, err)
			}
			if len(p.names) != opts.Pods {
				return nil, nil, fmt.Errorf("list %s from cache: %d objects, want %d", o.what, len(p.names), opts.Pods)
			}
			lat[o.what] = append(lat[o.what], d)
			total[o.what] += d
			sizes[o.what] = float64(p.size) / float64(max(1, opts.Pods))
		}
	}
	out := map[string]Result{}
	for _, o := range kinds {
		r := Result{
			Name: fmt.Sprintf("list all %s from cache (RV=0)", o.what), Ops: opts.Repeats, Items: opts.Pods,
			Duration: total[o.what], Rate: rate(opts.Repeats, total[o.what]),
			Note: fmt.Sprintf("%.0f B of JSON per item", sizes[o.what]),
		}
		lat[o.what].fill(&r)
		out[o.what] = r
	}
	return out, sizes, nil
}

// fanOutTarget updates o's objects with merge patches and watches them
// raw.
func (o objects) fanOutTarget(opts Options) fanOutTarget {
	return fanOutTarget{
		watches: rawWatches{rest: o.rest, resource: o.resource},
		resourceVersion: func(ctx context.Context) (string, error) {
			p, err := o.lister().list(ctx, opts.Namespace, metav1.ListOptions{Limit: 1})
			if err != nil {
				return "", err
			}
			if p.rv == "" {
				return "", fmt.Errorf("list of %s without a resourceVersion", o.what)
			}
			return p.rv, nil
		},
		update: func(ctx context.Context, i int, patch []byte) (string, error) {
			body, err := o.rest.Patch(types.MergePatchType).Namespace(opts.Namespace).Resource(o.resource).Name(podName(i)).
				Body(patch).Do(ctx).Raw()
			if err != nil {
				return "", err
			}
			var ev event
			if err := podJSON(&jsonScan{b: body}, &ev); err != nil {
				return "", fmt.Errorf("patch answer: %w", err)
			}
			return ev.rv, nil
		},
	}
}

// collectGarbage asks the server to collect garbage, through the heap
// profile's gc=1 (Go's net/http/pprof, which kube-apiserver and Kite both
// serve at /debug/pprof/ unless profiling is off), so that heap in use
// scraped next holds live objects only.
func collectGarbage(ctx context.Context, client kubernetes.Interface) error {
	err := client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("GET /debug/pprof/heap?gc=1: %w", err)
	}
	return nil
}

// compare makes the rows of custom resource against pod.
func compare(creates, lists, fanOuts map[string]Result, sizes map[string]float64, memory map[string]*Memory, n int) []Comparison {
	const p, c = "pods", "custom resources"
	row := func(measure, unit string, pod, cr float64, goal string) Comparison {
		r := Comparison{Measure: measure, Unit: unit, Pods: pod, CustomResources: cr, Goal: goal}
		if pod != 0 {
			r.Ratio = cr / pod
		}
		return r
	}
	rows := []Comparison{
		row("creates/s", "/s", creates[p].Rate, creates[c].Rate, ""),
		row("create p50", "ms", ms(creates[p].P50), ms(creates[c].P50), ""),
		row(fmt.Sprintf("list %d from cache (RV=0), p50", n), "ms", ms(lists[p].P50), ms(lists[c].P50), "<= 1.2x"),
		row("list item size (JSON)", "B", sizes[p], sizes[c], ""),
		row("fan-out, all namespaces, deliveries/s", "/s", fanOuts[p].Rate, fanOuts[c].Rate, ""),
		row("fan-out p50 write to receipt", "ms", ms(fanOuts[p].P50), ms(fanOuts[c].P50), ""),
	}
	if mp, mc := memory[p], memory[c]; mp != nil && mc != nil && mp.HeapAfter > 0 && mc.HeapAfter > 0 {
		rows = append(rows,
			row("Go heap in use per stored object", "B", mp.HeapPerPod, mc.HeapPerPod, "<= 1.2x"),
			row("Go heap in use per object, second half", "B", mp.HeapPerPodSecondHalf, mc.HeapPerPodSecondHalf, "<= 1.2x"),
			row("RSS per stored object", "B", mp.RSSPerPod, mc.RSSPerPod, ""),
			row("RSS per object, second half", "B", mp.RSSPerPodSecondHalf, mc.RSSPerPodSecondHalf, ""))
	}
	if fp, fc := fanOuts[p].Delivery, fanOuts[c].Delivery; fp != nil && fc != nil {
		rows = append(rows, Comparison{Measure: "lost events", Pods: float64(fp.Lost), CustomResources: float64(fc.Lost), Goal: "0"})
	}
	return rows
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
