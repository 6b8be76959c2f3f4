// Command ctrlvs measures the workload controllers behind an API server
// (Kite's in-process ones, or kube-controller-manager's), for
// bench/ctrlvs.sh (issue 25). It registers --nodes hollow nodes and plays
// their kubelets through the API: every pod bound to one is marked
// Running and Ready at once, and every pod being deleted is removed at
// once. Then: a StatefulSet of --replicas with podManagementPolicy
// Parallel and one with OrderedReady, each until all pods exist and until
// all are Ready; a DaemonSet over the hollow nodes until all are Ready,
// then a rollout (a template change, maxUnavailable 1 as upstream's
// default) until every node runs an updated Ready pod; evictions through
// the Eviction API of --replicas pods under a PodDisruptionBudget (each
// checked against it), per second. It prints one JSON object.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

type result struct {
	Label string    `json:"label"`
	Start time.Time `json:"started"`
	Load  []string  `json:"load"`
	// Seconds.
	STSParallelCreated  float64 `json:"sts_parallel_all_created_s"`
	STSParallelReady    float64 `json:"sts_parallel_all_ready_s"`
	STSOrderedCreated   float64 `json:"sts_ordered_all_created_s"`
	STSOrderedReady     float64 `json:"sts_ordered_all_ready_s"`
	DSReady             float64 `json:"ds_all_ready_s"`
	DSRollout           float64 `json:"ds_rollout_s"`
	EvictionsPerSec     float64 `json:"evictions_per_s"`
	Evictions           int     `json:"evictions"`
	EvictionsRefused429 int     `json:"evictions_refused_429"`
	// Requests are the API requests made during each phase (sts_Parallel,
	// sts_OrderedReady, ds_ready, ds_rollout, evict), by "VERB
	// resource[/subresource] code", from apiserver_request_total.
	Requests map[string]map[string]float64 `json:"requests,omitempty"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	label := flag.String("label", "", "name of this run in the output")
	nodes := flag.Int("nodes", 100, "hollow nodes")
	replicas := flag.Int("replicas", 100, "StatefulSet replicas and evicted pods")
	timeout := flag.Duration("timeout", 5*time.Minute, "bound of each wait")
	only := flag.String("only", "", "comma-separated subset of sts,ds,evict (default all)")
	timeline := flag.String("timeline", "", "write every event of the benchmark's pods to this file (JSON lines)")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err == nil {
		cfg.QPS, cfg.Burst = -1, 0
	}
	var client *kubernetes.Clientset
	if err == nil {
		client, err = kubernetes.NewForConfig(cfg)
	}
	if err != nil {
		fail(err)
	}
	b := &bench{client: client, nodes: *nodes, replicas: *replicas, timeout: *timeout, only: *only, timelinePath: *timeline,
		r: &result{Label: *label, Start: time.Now()}}
	if err := b.run(ctx); err != nil {
		fail(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(b.r); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ctrlvs:", err)
	os.Exit(1)
}

type bench struct {
	client          kubernetes.Interface
	nodes, replicas int
	timeout         time.Duration
	only            string
	timelinePath    string
	r               *result
}

func (b *bench) want(w string) bool {
	return b.only == "" || strings.Contains(","+b.only+",", ","+w+",")
}

func loadavg() string {
	d, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(d))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func (b *bench) run(ctx context.Context) error {
	if err := b.registerNodes(ctx); err != nil {
		return err
	}
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := b.hollowKubelets(hctx); err != nil {
		return err
	}
	if b.timelinePath != "" {
		if err := b.timeline(hctx, b.timelinePath); err != nil {
			return err
		}
	}
	if b.want("sts") {
		for _, policy := range []appsv1.PodManagementPolicyType{appsv1.ParallelPodManagement, appsv1.OrderedReadyPodManagement} {
			b.r.Load = append(b.r.Load, loadavg())
			var created, ready float64
			err := b.phase(ctx, "sts_"+string(policy), func() (err error) {
				created, ready, err = b.statefulSet(ctx, policy)
				return err
			})
			if err != nil {
				return err
			}
			if policy == appsv1.ParallelPodManagement {
				b.r.STSParallelCreated, b.r.STSParallelReady = created, ready
			} else {
				b.r.STSOrderedCreated, b.r.STSOrderedReady = created, ready
			}
		}
	}
	if b.want("ds") {
		b.r.Load = append(b.r.Load, loadavg())
		if err := b.daemonSet(ctx); err != nil {
			return err
		}
	}
	if b.want("evict") {
		b.r.Load = append(b.r.Load, loadavg())
		if err := b.evictions(ctx); err != nil {
			return err
		}
	}
	b.r.Load = append(b.r.Load, loadavg())
	return nil
}

func nodeName(i int) string { return "hollow-" + strconv.Itoa(i) }

// registerNodes creates the hollow nodes, Ready, with room for 110 pods.
func (b *bench) registerNodes(ctx context.Context) error {
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("64Gi"), v1.ResourcePods: resource.MustParse("110")}
	for i := range b.nodes {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: map[string]string{"kubernetes.io/hostname": nodeName(i), "hollow": "true"}}}
		n, err := b.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			n, err = b.client.CoreV1().Nodes().Get(ctx, nodeName(i), metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("node %s: %w", nodeName(i), err)
		}
		n.Status.Capacity, n.Status.Allocatable = res, res
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if _, err := b.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s status: %w", nodeName(i), err)
		}
	}
	return nil
}

// hollowKubelets follows every pod bound to a hollow node: a new one is
// marked Running and Ready, one being deleted is removed at once, by 16
// workers.
func (b *bench) hollowKubelets(ctx context.Context) error {
	w, err := b.client.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	work := make(chan *v1.Pod, 10000)
	go func() {
		defer w.Stop()
		defer close(work)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					fmt.Fprintln(os.Stderr, "ctrlvs: the hollow kubelets' watch ended")
					return
				}
				p, isPod := ev.Object.(*v1.Pod)
				if !isPod || ev.Type == watch.Deleted || !strings.HasPrefix(p.Spec.NodeName, "hollow-") {
					continue
				}
				if p.DeletionTimestamp != nil || p.Status.Phase != v1.PodRunning {
					work <- p
				}
			}
		}
	}()
	for range 16 {
		go func() {
			for p := range work {
				b.hollowSync(ctx, p)
			}
		}()
	}
	return nil
}

func (b *bench) hollowSync(ctx context.Context, p *v1.Pod) {
	pods := b.client.CoreV1().Pods(p.Namespace)
	if p.DeletionTimestamp != nil {
		err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0)), Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "ctrlvs: delete %s/%s: %v\n", p.Namespace, p.Name, err)
		}
		return
	}
	now := metav1.Now()
	p = p.DeepCopy()
	p.Status.Phase = v1.PodRunning
	p.Status.StartTime = &now
	p.Status.PodIP, p.Status.HostIP = "10.99.0.1", "10.98.0.1"
	cond := func(t v1.PodConditionType) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: now}
	}
	p.Status.Conditions = []v1.PodCondition{cond(v1.PodScheduled), cond(v1.PodInitialized), cond(v1.ContainersReady), cond(v1.PodReady)}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "hollow://" + c.Image, ContainerID: "hollow://" + string(p.UID) + "/" + c.Name,
			Ready: true, Started: new(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}},
		})
	}
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "ctrlvs: status of %s/%s: %v\n", p.Namespace, p.Name, err)
	}
}

func (b *bench) namespace(ctx context.Context, prefix string) (string, func(), error) {
	ns, err := b.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("create namespace: %w", err)
	}
	return ns.Name, func() {
		b.client.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
	}, nil
}

func podSpec() v1.PodTemplateSpec {
	return v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "ctrlvs"}},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: new(int64(1)),
			Containers:                    []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10.2"}},
		},
	}
}

// poll waits until cond holds, checking every 20 ms (cheap: the lists
// are of one namespace's pods or one object).
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v", what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// statefulSet creates a StatefulSet of b.replicas and returns the seconds
// until all its pods exist and until its status counts them all Ready.
func (b *bench) statefulSet(ctx context.Context, policy appsv1.PodManagementPolicyType) (created, ready float64, err error) {
	ns, done, err := b.namespace(ctx, "ctrlvs-sts-")
	if err != nil {
		return 0, 0, err
	}
	defer done()
	var seen sync.Map
	var count sync.WaitGroup
	count.Add(b.replicas)
	w, err := b.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop()
	allCreated := make(chan time.Time, 1)
	go func() {
		n := 0
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type != watch.Added {
				continue
			}
			if _, dup := seen.LoadOrStore(p.Name, true); !dup {
				if n++; n == b.replicas {
					allCreated <- time.Now()
				}
			}
		}
	}()
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: new(int32(b.replicas)), ServiceName: "web", PodManagementPolicy: policy,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ctrlvs"}},
			Template: podSpec(),
		},
	}
	start := time.Now()
	if _, err := b.client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		return 0, 0, fmt.Errorf("create statefulset: %w", err)
	}
	err = poll(ctx, b.timeout, "statefulset "+string(policy)+" ready", func() (bool, error) {
		s, err := b.client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && s.Status.ReadyReplicas == int32(b.replicas), err
	})
	if err != nil {
		return 0, 0, err
	}
	ready = time.Since(start).Seconds()
	select {
	case t := <-allCreated:
		created = t.Sub(start).Seconds()
	case <-time.After(10 * time.Second):
		return 0, 0, errors.New("statefulset ready but not every pod seen created")
	}
	return created, ready, nil
}

// daemonSet runs a DaemonSet over the hollow nodes until every one has a
// Ready pod, then changes its template and waits until every node has an
// updated Ready pod.
func (b *bench) daemonSet(ctx context.Context) error {
	ns, done, err := b.namespace(ctx, "ctrlvs-ds-")
	if err != nil {
		return err
	}
	defer done()
	tmpl := podSpec()
	tmpl.Spec.NodeSelector = map[string]string{"hollow": "true"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ctrlvs"}},
			Template: tmpl,
		},
	}
	dsc := b.client.AppsV1().DaemonSets(ns)
	start := time.Now()
	if _, err := dsc.Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create daemonset: %w", err)
	}
	done1 := func(gen int64) func() (bool, error) {
		return func() (bool, error) {
			d, err := dsc.Get(ctx, "agent", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			s, n := d.Status, int32(b.nodes)
			return s.ObservedGeneration >= gen && s.DesiredNumberScheduled == n && s.NumberReady == n && s.UpdatedNumberScheduled == n && s.NumberAvailable == n, nil
		}
	}
	if err := b.phase(ctx, "ds_ready", func() error { return poll(ctx, b.timeout, "daemonset ready", done1(1)) }); err != nil {
		return err
	}
	b.r.DSReady = time.Since(start).Seconds()
	d, err := dsc.Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		return err
	}
	d.Spec.Template.Spec.Containers[0].Env = []v1.EnvVar{{Name: "ROLLOUT", Value: "2"}}
	err = b.phase(ctx, "ds_rollout", func() error {
		start = time.Now()
		d, err = dsc.Update(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update daemonset: %w", err)
		}
		return poll(ctx, b.timeout, "daemonset rollout", done1(d.Generation))
	})
	if err != nil {
		return err
	}
	b.r.DSRollout = time.Since(start).Seconds()
	return nil
}

// evictions creates b.replicas pods under a PodDisruptionBudget that
// allows all of them to go (minAvailable 0), waits for the disruption
// controller to say so, and evicts them all, 16 at a time: each eviction
// is checked against the budget and decrements disruptionsAllowed. A 429
// (the budget's status not yet current) is retried after 10 ms.
func (b *bench) evictions(ctx context.Context) error {
	ns, done, err := b.namespace(ctx, "ctrlvs-evict-")
	if err != nil {
		return err
	}
	defer done()
	pods := b.client.CoreV1().Pods(ns)
	for i := range b.replicas {
		t := podSpec()
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + strconv.Itoa(i), Namespace: ns, Labels: t.Labels}, Spec: t.Spec}
		p.Spec.NodeName = nodeName(i % b.nodes)
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod: %w", err)
		}
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "budget", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(0)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ctrlvs"}},
		},
	}
	if _, err := b.client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pdb: %w", err)
	}
	if err := poll(ctx, b.timeout, "pdb allows all", func() (bool, error) {
		p, err := b.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "budget", metav1.GetOptions{})
		return err == nil && p.Status.CurrentHealthy == int32(b.replicas) && p.Status.DisruptionsAllowed == int32(b.replicas), err
	}); err != nil {
		return err
	}
	var mu sync.Mutex
	refused := 0
	next := make(chan int, b.replicas)
	for i := range b.replicas {
		next <- i
	}
	close(next)
	errs := make(chan error, 16)
	before, berr := b.requestCounts(ctx)
	start := time.Now()
	for range 16 {
		go func() {
			for i := range next {
				ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p-" + strconv.Itoa(i), Namespace: ns}}
				for {
					err := pods.EvictV1(ctx, ev)
					if err == nil {
						break
					}
					if !apierrors.IsTooManyRequests(err) {
						errs <- fmt.Errorf("evict p-%d: %w", i, err)
						return
					}
					mu.Lock()
					refused++
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
				}
			}
			errs <- nil
		}()
	}
	var all []error
	for range 16 {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		return err
	}
	d := time.Since(start)
	if after, aerr := b.requestCounts(ctx); berr == nil && aerr == nil {
		b.record("evict", before, after)
	}
	b.r.Evictions, b.r.EvictionsRefused429 = b.replicas, refused
	b.r.EvictionsPerSec = float64(b.replicas) / d.Seconds()
	return nil
}
