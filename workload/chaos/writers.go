package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/workload/chaoscheck"
)

const (
	groupLabel    = "chaos.kite.io/group"
	seqAnnotation = "chaos.kite.io/seq"
	// objectsPerWriter is how many configmaps each writer creates and
	// then updates in turn; every deleteEvery-th write of one is a delete
	// (the next creates it again).
	objectsPerWriter = 8
	deleteEvery      = 10
	requestTimeout   = 10 * time.Second
)

// writeLog collects every writer's writes.
type writeLog struct {
	mu     sync.Mutex
	writes []chaoscheck.Write
	groups map[string]int // object name → its group
}

func (l *writeLog) add(w chaoscheck.Write, group int) {
	l.mu.Lock()
	l.writes = append(l.writes, w)
	if l.groups == nil {
		l.groups = map[string]int{}
	}
	l.groups[w.Name] = group
	l.mu.Unlock()
}

// all returns the writes and each object's group.
func (l *writeLog) all() ([]chaoscheck.Write, map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]chaoscheck.Write(nil), l.writes...), l.groups
}

// writer creates and updates its objects with conditional updates (the
// resourceVersion it last saw), so that a write whose answer was lost can
// never land after a later one: if it landed, the later one conflicts.
type writer struct {
	client kubernetes.Interface
	ns     string
	id     int
	groups int
	log    *writeLog
	seq    int64
	rv     [objectsPerWriter]string // "" until created, and once deleted
	writes [objectsPerWriter]int
}

func (w *writer) name(i int) string { return fmt.Sprintf("w%02d-%d", w.id, i) }

func (w *writer) group(i int) int { return (w.id*objectsPerWriter + i) % w.groups }

func (w *writer) run(ctx context.Context, pause time.Duration) {
	for i := 0; ctx.Err() == nil; i = (i + 1) % objectsPerWriter {
		w.write(ctx, i)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// write makes one write of object i and records its outcome.
func (w *writer) write(ctx context.Context, i int) {
	w.seq++
	w.writes[i]++
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if w.rv[i] != "" && w.writes[i]%deleteEvery == 0 {
		w.delete(rctx, i)
		return
	}
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: w.name(i), Namespace: w.ns, ResourceVersion: w.rv[i],
			Labels:      map[string]string{groupLabel: strconv.Itoa(w.group(i))},
			Annotations: map[string]string{seqAnnotation: strconv.FormatInt(w.seq, 10)},
		},
		Data: map[string]string{"seq": strconv.FormatInt(w.seq, 10)},
	}
	var got *v1.ConfigMap
	var err error
	if w.rv[i] == "" {
		got, err = w.client.CoreV1().ConfigMaps(w.ns).Create(rctx, cm, metav1.CreateOptions{})
	} else {
		got, err = w.client.CoreV1().ConfigMaps(w.ns).Update(rctx, cm, metav1.UpdateOptions{})
	}
	switch {
	case err == nil:
		w.rv[i] = got.ResourceVersion
		w.log.add(chaoscheck.Write{Name: cm.Name, Seq: w.seq, RV: parseRV(got.ResourceVersion), Acked: true}, w.group(i))
	case definite(err):
		// Not written: an earlier unknown write landed, or an unknown
		// delete did. Learn where the object is for the next attempt.
		w.refresh(rctx, i)
	default:
		// Connection cut, timeout, 5xx, 429, or the run ending while the
		// request was in flight: it may or may not have landed.
		w.log.add(chaoscheck.Write{Name: cm.Name, Seq: w.seq}, w.group(i))
	}
}

// delete deletes object i if it still has the resourceVersion last seen,
// so that it never removes a write it did not see.
func (w *writer) delete(ctx context.Context, i int) {
	rv := w.rv[i]
	err := w.client.CoreV1().ConfigMaps(w.ns).Delete(ctx, w.name(i), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	switch {
	case err == nil:
		w.rv[i] = ""
		w.log.add(chaoscheck.Write{Name: w.name(i), Seq: w.seq, Acked: true, Delete: true}, w.group(i))
	case definite(err):
		w.refresh(ctx, i)
	default:
		w.log.add(chaoscheck.Write{Name: w.name(i), Seq: w.seq, Delete: true}, w.group(i))
	}
}

// definite reports whether err says for certain that nothing was written.
func definite(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) ||
		apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// refresh reads object i's resourceVersion ("" when it is gone); on error
// it leaves it, and the next write finds out again.
func (w *writer) refresh(ctx context.Context, i int) {
	cur, err := w.client.CoreV1().ConfigMaps(w.ns).Get(ctx, w.name(i), metav1.GetOptions{})
	switch {
	case err == nil:
		w.rv[i] = cur.ResourceVersion
	case apierrors.IsNotFound(err):
		w.rv[i] = ""
	}
}
