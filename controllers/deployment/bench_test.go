package deployment_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers"
)

// benchReplicas is the size: a Deployment of 1 000 replicas.
const benchReplicas = 1000

func benchDeployment(name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
}

func benchManager(b *testing.B, names ...string) func() {
	m, err := controllers.New(controllers.Options{Config: srv.RESTConfig(), Names: names})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	return func() { cancel(); wg.Wait() }
}

func countPods(ctx context.Context, cs kubernetes.Interface, ns string) (int, error) {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(l.Items), nil
}

// BenchmarkScaleFrom0 scales a Deployment from 0 to 1 000 replicas and
// reports pods created per second until all exist.
func BenchmarkScaleFrom0(b *testing.B) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	stop := benchManager(b, controllers.Deployment, controllers.ReplicaSet)
	defer stop()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cs.AppsV1().Deployments(ns.Name).Create(context.Background(), benchDeployment("web", 0), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // the empty ReplicaSet exists
		b.StartTimer()
		start := time.Now()
		sc, err := cs.AppsV1().Deployments(ns.Name).GetScale(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		sc.Spec.Replicas = benchReplicas
		if _, err := cs.AppsV1().Deployments(ns.Name).UpdateScale(context.Background(), "web", sc, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := countPods(ctx, cs, ns.Name)
			return n >= benchReplicas, err
		})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		b.StartTimer()
	}
	b.ReportMetric(float64(benchReplicas*b.N)/total.Seconds(), "pods/s")
	b.ReportMetric(total.Seconds()/float64(b.N), "s/1000pods")
}

// BenchmarkCollectDeployment deletes a Deployment of 1 000 pods in the
// background and reports the time until the garbage collector has removed
// every ReplicaSet and pod.
func BenchmarkCollectDeployment(b *testing.B) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	stop := benchManager(b, controllers.Deployment, controllers.ReplicaSet, controllers.GarbageCollector)
	defer stop()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cs.AppsV1().Deployments(ns.Name).Create(context.Background(), benchDeployment("web", benchReplicas), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := countPods(ctx, cs, ns.Name)
			return n >= benchReplicas, err
		}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		bg := metav1.DeletePropagationBackground
		if err := cs.AppsV1().Deployments(ns.Name).Delete(context.Background(), "web", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
			b.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := countPods(ctx, cs, ns.Name)
			return n == 0, err
		}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/1000pods")
}

// BenchmarkIdleControllers keeps 10 000 pods of 50 Deployments, with the
// deployment, replicaset and garbage collector controllers running, and
// reports the CPU the whole process (controllers, API server and etcd,
// which run in it) spends per second of wall time once nothing changes.
func BenchmarkIdleControllers(b *testing.B) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	stop := benchManager(b, controllers.Deployment, controllers.ReplicaSet, controllers.GarbageCollector)
	defer stop()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "idle-"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) }()
	const deployments, each = 50, 200
	for i := range deployments {
		if _, err := cs.AppsV1().Deployments(ns.Name).Create(context.Background(), benchDeployment(fmt.Sprintf("idle-%d", i), each), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := countPods(ctx, cs, ns.Name)
		return n >= deployments*each, err
	}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(5 * time.Second) // statuses settle
	b.ResetTimer()
	var cpu, wall time.Duration
	for i := 0; i < b.N; i++ {
		before, start := processCPU(b), time.Now()
		time.Sleep(10 * time.Second)
		cpu += processCPU(b) - before
		wall += time.Since(start)
	}
	b.ReportMetric(float64(cpu.Milliseconds())/wall.Seconds(), "cpu-ms/s")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
