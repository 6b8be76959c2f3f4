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
	// then updates in turn.
	objectsPerWriter = 8
	requestTimeout   = 10 * time.Second
)

// writeLog collects every writer's writes.
type writeLog struct {
	mu     sync.Mutex
	writes []chaoscheck.Write
}

func (l *writeLog) add(w chaoscheck.Write) {
	l.mu.Lock()
	l.writes = append(l.writes, w)
	l.mu.Unlock()
}

func (l *writeLog) all() []chaoscheck.Write {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]chaoscheck.Write(nil), l.writes...)
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
	rv     [objectsPerWriter]string // "" until created
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
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: w.name(i), Namespace: w.ns, ResourceVersion: w.rv[i],
			Labels:      map[string]string{groupLabel: strconv.Itoa(w.group(i))},
			Annotations: map[string]string{seqAnnotation: strconv.FormatInt(w.seq, 10)},
		},
		Data: map[string]string{"seq": strconv.FormatInt(w.seq, 10)},
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var got *v1.ConfigMap
	var err error
	if w.rv[i] == "" {
		got, err = w.client.CoreV1().ConfigMaps(w.ns).Create(rctx, cm, metav1.CreateOptions{})
	} else {
		got, err = w.client.CoreV1().ConfigMaps(w.ns).Update(rctx, cm, metav1.UpdateOptions{})
	}
	switch {
	case err == nil:
		rv, _ := strconv.ParseInt(got.ResourceVersion, 10, 64)
		w.rv[i] = got.ResourceVersion
		w.log.add(chaoscheck.Write{Name: cm.Name, Seq: w.seq, RV: rv, Acked: true})
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		// Definitely not written: an earlier unknown write landed. Learn
		// its resourceVersion for the next attempt.
		if cur, gerr := w.client.CoreV1().ConfigMaps(w.ns).Get(rctx, cm.Name, metav1.GetOptions{}); gerr == nil {
			w.rv[i] = cur.ResourceVersion
		}
	case apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		// Definite refusals that change nothing; NotFound would mean an
		// object we created vanished, which the final check reports.
	default:
		// Connection cut, timeout, 5xx, 429, or the run ending while the
		// request was in flight: it may or may not have landed.
		w.log.add(chaoscheck.Write{Name: cm.Name, Seq: w.seq})
	}
}
