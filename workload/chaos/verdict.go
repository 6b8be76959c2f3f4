package chaos

import (
	"context"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kite-project/kite/workload/chaoscheck"
)

// verdict reads the final state (a fresh consistent list, and etcd's values)
// and fills the report's checks.
func (r *runner) verdict(ctx context.Context, client kubernetes.Interface, writes []chaoscheck.Write, group map[string]int, watchers []*watcher, pods *agentPods) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := client.CoreV1().ConfigMaps(namespace).List(rctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("final list: %w", err)
	}
	etcdObjs, err := r.etcdObjects(rctx)
	if err != nil {
		return err
	}
	final := map[string]chaoscheck.Object{}
	byGroup := map[int]map[string]int64{}
	for _, cm := range l.Items {
		g, err := strconv.Atoi(cm.Labels[groupLabel])
		if err != nil {
			continue // kube-root-ca.crt and the like
		}
		seq, _ := strconv.ParseInt(cm.Annotations[seqAnnotation], 10, 64)
		rv := parseRV(cm.ResourceVersion)
		e := etcdObjs[cm.Name]
		final[cm.Name] = chaoscheck.Object{Seq: seq, RV: rv, EtcdRev: e.EtcdRev, EtcdSeq: e.EtcdSeq}
		if byGroup[g] == nil {
			byGroup[g] = map[string]int64{}
		}
		byGroup[g][cm.Name] = rv
	}
	wr := chaoscheck.CheckWrites(writes, final)
	rep := r.report
	rep.WritesAcknowledged, rep.WritesUnknown = wr.Acknowledged, wr.Unknown
	rep.Lost += wr.Lost + wr.Invented
	rep.Problems = append(rep.Problems, wr.Problems...)

	// Each watcher is judged against the acknowledged writes of its group.
	ackedBy := map[int][]chaoscheck.Write{}
	for _, w := range writes {
		if g, ok := group[w.Name]; ok && w.Acked && !w.Delete {
			ackedBy[g] = append(ackedBy[g], w)
		}
	}
	for _, w := range watchers {
		w.mu.Lock()
		sr := w.stream.Check(ackedBy[w.group], byGroup[w.group])
		w.mu.Unlock()
		rep.EventsDelivered += int64(sr.Events)
		rep.Relists += sr.Relists
		rep.Lost += sr.Lost
		rep.Duplicated += sr.Duplicated
		rep.Reordered += sr.Reordered
		if sr.Diverged {
			rep.Diverged++
		}
		if len(rep.Problems) < 50 {
			rep.Problems = append(rep.Problems, sr.Problems...)
		}
	}

	rep.PodProblems = append(rep.PodProblems, pods.check()...)
	rep.PodProblems = append(rep.PodProblems, pods.checkStatus(rctx)...)
	return nil
}

// etcdObjects reads the namespace's configmaps straight from etcd (as the
// API server stored them, JSON or protobuf): each one's mod revision and
// sequence number.
func (r *runner) etcdObjects(ctx context.Context) (map[string]chaoscheck.Object, error) {
	prefix := "/registry/configmaps/" + namespace + "/"
	resp, err := r.etcd.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("final etcd read: %w", err)
	}
	decoder := scheme.Codecs.UniversalDeserializer()
	objs := map[string]chaoscheck.Object{}
	for _, kv := range resp.Kvs {
		name := string(kv.Key[len(prefix):])
		o := chaoscheck.Object{EtcdRev: kv.ModRevision}
		obj, _, err := decoder.Decode(kv.Value, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decode etcd key %s: %w", kv.Key, err)
		}
		if cm, ok := obj.(*v1.ConfigMap); ok {
			o.EtcdSeq, _ = strconv.ParseInt(cm.Annotations[seqAnnotation], 10, 64)
		}
		objs[name] = o
	}
	return objs, nil
}
