package chaos

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// agentPods are pods bound to the agent's node whose processes must run
// once each, from start to end, whatever fails around them.
type agentPods struct {
	client kubernetes.Interface
	ns     string
	node   string
	marker string // unique to the run: "sleep 3600.<token>"
	n      int
	pids   []int // each pod's process, as first seen
}

func (p *agentPods) name(i int) string    { return fmt.Sprintf("chaos-pod-%d", i) }
func (p *agentPods) command(i int) string { return fmt.Sprintf("%s%d", p.marker, i) }

func (p *agentPods) create(ctx context.Context) error {
	for i := range p.n {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name(i), Namespace: p.ns},
			Spec: v1.PodSpec{
				NodeName: p.node, TerminationGracePeriodSeconds: new(int64(1)),
				Containers: []v1.Container{{Name: "sleep", Image: "busybox", Command: []string{"sleep", p.command(i)[len("sleep "):]}}},
			},
		}
		if _, err := p.client.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
	}
	// Wait for one process per pod; pgrep matches the exact command line.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p.pids = p.pids[:0]
		for i := range p.n {
			if ps := pids("^" + p.command(i) + "$"); len(ps) == 1 {
				p.pids = append(p.pids, ps[0])
			}
		}
		if len(p.pids) == p.n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agent pods: %d of %d processes running after 2m", len(p.pids), p.n)
		}
		pause(ctx, 500*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// check reports every pod whose process is not the one first seen, or
// not alone.
func (p *agentPods) check() []string {
	var problems []string
	for i := range p.n {
		ps := pids("^" + p.command(i) + "$")
		if len(ps) != 1 || ps[0] != p.pids[i] {
			problems = append(problems, fmt.Sprintf("pod %s: processes %v, want only %d", p.name(i), ps, p.pids[i]))
		}
	}
	return problems
}

// checkStatus reports pods that are not Running with no restarts.
func (p *agentPods) checkStatus(ctx context.Context) []string {
	var problems []string
	for i := range p.n {
		pod, err := p.client.CoreV1().Pods(p.ns).Get(ctx, p.name(i), metav1.GetOptions{})
		if err != nil {
			problems = append(problems, fmt.Sprintf("pod %s: %v", p.name(i), err))
			continue
		}
		restarts := int32(-1)
		if len(pod.Status.ContainerStatuses) == 1 {
			restarts = pod.Status.ContainerStatuses[0].RestartCount
		}
		if pod.Status.Phase != v1.PodRunning || restarts != 0 {
			problems = append(problems, fmt.Sprintf("pod %s: phase %s, restarts %d; want Running, 0", p.name(i), pod.Status.Phase, restarts))
		}
	}
	return problems
}
