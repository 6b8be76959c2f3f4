package listwatch

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// scriptedServer is a real HTTP server on 127.0.0.1 that speaks the
// Kubernetes list and watch API for pods (GET /api/v1/pods, JSON), backed
// by an in-memory history of events, and that a test scripts: faults for
// the next requests, bookmarks, error events, closed watches, compaction,
// and being stopped and restarted on the same port (connection refused in
// between). It records every list and watch request it receives.
type scriptedServer struct {
	t    *testing.T
	addr string
	// streaming says whether watches with sendInitialEvents=true are served;
	// when false they are refused with 422, as by a server without WatchList.
	streaming bool

	// mu guards everything below.
	mu        sync.Mutex
	pods      map[string]*v1.Pod
	rv        int64
	history   []histEvent
	compacted int64
	faults    []fault
	requests  []string
	watchers  map[*watchConn]struct{}
	// changed is closed and replaced on every write, waking watchers.
	changed chan struct{}

	srv     *http.Server
	stopped chan struct{} // closed while the server is stopped
	handler sync.WaitGroup
	serve   sync.WaitGroup
}

type histEvent struct {
	typ watch.EventType
	pod *v1.Pod
	rv  int64
}

// fault answers the next request of its verb ("list" or "watch").
type fault struct {
	verb string
	// status, if set, is the HTTP error answered instead.
	status *apierrors.StatusError
	// event, if set, is sent as an ERROR event on a 200 watch, which then ends.
	event *apierrors.StatusError
	// continued makes the fault answer only a list with a continue token.
	continued bool
	// closeAtOnce ends a 200 watch before any event.
	closeAtOnce bool
}

// watchConn is one open watch.
type watchConn struct {
	ctl  chan watchCtl
	done chan struct{} // closed when the handler returns
}

type watchCtl struct {
	close    bool
	bookmark bool
	errEvent *apierrors.StatusError
}

func newScriptedServer(t *testing.T) *scriptedServer {
	t.Helper()
	s := &scriptedServer{
		t:        t,
		pods:     map[string]*v1.Pod{},
		watchers: map[*watchConn]struct{}{},
		changed:  make(chan struct{}),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s.addr = ln.Addr().String()
	s.startOn(ln)
	t.Cleanup(s.stop)
	return s
}

func (s *scriptedServer) startOn(ln net.Listener) {
	s.mu.Lock()
	s.stopped = make(chan struct{})
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	srv := s.srv
	s.mu.Unlock()
	s.serve.Add(1)
	go func() {
		defer s.serve.Done()
		_ = srv.Serve(ln)
	}()
}

// stop closes the listener and every connection: clients now get
// connection refused. It waits for every handler to return.
func (s *scriptedServer) stop() {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return
	}
	// Close the connections first, so that no request is answered while
	// stopping: a client sees a broken connection, then refused ones.
	_ = srv.Close()
	s.serve.Wait()
	s.mu.Lock()
	s.srv = nil
	close(s.stopped)
	s.mu.Unlock()
	s.handler.Wait()
}

// restart listens again on the same address.
func (s *scriptedServer) restart() {
	s.t.Helper()
	var ln net.Listener
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err = net.Listen("tcp", s.addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // the port is released asynchronously
	}
	if err != nil {
		s.t.Fatalf("listen again on %s: %v", s.addr, err)
	}
	s.startOn(ln)
}

// config is a client config for the server, with a transport of its own so
// that the test can close its idle connections (goleak).
func (s *scriptedServer) clientset() *kubernetes.Clientset {
	s.t.Helper()
	tr := &http.Transport{}
	s.t.Cleanup(tr.CloseIdleConnections)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + s.addr, Transport: tr, QPS: -1})
	if err != nil {
		s.t.Fatalf("clientset: %v", err)
	}
	return cs
}

// write applies one change, recording it in history.
func (s *scriptedServer) write(typ watch.EventType, pod *v1.Pod) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	key := pod.Namespace + "/" + pod.Name
	if old, ok := s.pods[key]; ok && typ == watch.Deleted {
		// A DELETED event carries the object's last state, as the API
		// server sends it (field selectors match it).
		pod = old
	}
	p := pod.DeepCopy()
	p.ResourceVersion = strconv.FormatInt(s.rv, 10)
	if typ == watch.Deleted {
		delete(s.pods, key)
	} else {
		s.pods[key] = p
	}
	s.history = append(s.history, histEvent{typ: typ, pod: p, rv: s.rv})
	close(s.changed)
	s.changed = make(chan struct{})
	return p.ResourceVersion
}

func (s *scriptedServer) add(ns, name, node string) string {
	return s.write(watch.Added, testPod(ns, name, "", node))
}

func (s *scriptedServer) modify(ns, name, node string) string {
	return s.write(watch.Modified, testPod(ns, name, "", node))
}

func (s *scriptedServer) remove(ns, name string) string {
	return s.write(watch.Deleted, testPod(ns, name, "", ""))
}

// compact drops the history: watches from before now get 410.
func (s *scriptedServer) compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv
	s.history = nil
}

func (s *scriptedServer) failNext(f fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// toWatchers sends c to every open watch; it returns how many got it.
func (s *scriptedServer) toWatchers(c watchCtl) int {
	s.mu.Lock()
	ws := make([]*watchConn, 0, len(s.watchers))
	for w := range s.watchers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		select {
		case w.ctl <- c:
		case <-w.done:
		}
	}
	return len(ws)
}

func (s *scriptedServer) openWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watchers)
}

func (s *scriptedServer) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// state is the server's pods matching selector, key → resourceVersion.
func (s *scriptedServer) state(selector fields.Selector) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, p := range s.pods {
		if selector == nil || selector.Matches(podFields(p)) {
			out[k] = p.ResourceVersion
		}
	}
	return out
}

func podFields(p *v1.Pod) fields.Set {
	return fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace, "spec.nodeName": p.Spec.NodeName}
}

func (s *scriptedServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// Count the handler under mu, so that stop, which clears srv under mu
	// before waiting, never races with Add.
	s.mu.Lock()
	if s.srv == nil {
		s.mu.Unlock()
		writeStatus(w, apierrors.NewServiceUnavailable("stopping"))
		return
	}
	s.handler.Add(1)
	s.mu.Unlock()
	defer s.handler.Done()
	if r.URL.Path != "/api/v1/pods" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	selector, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	verb := "list"
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		verb = "watch"
	}
	rec := verb + " rv=" + q.Get("resourceVersion")
	if l := q.Get("limit"); l != "" {
		rec += " limit=" + l
	}
	if q.Get("continue") != "" {
		rec += " continue"
	}
	if q.Get("sendInitialEvents") == "true" {
		rec += " sendInitialEvents"
	}
	if m := q.Get("resourceVersionMatch"); m != "" {
		rec += " match=" + m
	}
	if fs := q.Get("fieldSelector"); fs != "" {
		rec += " fieldSelector=" + fs
	}

	s.mu.Lock()
	var f *fault
	for i := range s.faults {
		if s.faults[i].verb == verb && (!s.faults[i].continued || q.Get("continue") != "") {
			ff := s.faults[i]
			f = &ff
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			break
		}
	}
	if f != nil && f.status != nil {
		rec += fmt.Sprintf(" -> %d", f.status.Status().Code)
	}
	if verb == "watch" && q.Get("sendInitialEvents") == "true" && !s.streaming {
		rec += " -> 422"
	}
	s.requests = append(s.requests, rec)
	s.mu.Unlock()

	if f != nil && f.status != nil {
		writeStatus(w, f.status)
		return
	}
	if verb == "list" {
		s.serveList(w, q, selector)
		return
	}
	if q.Get("sendInitialEvents") == "true" && !s.streaming {
		writeStatus(w, apierrors.NewInvalid(schema.GroupKind{Kind: "ListOptions"}, "", field.ErrorList{
			field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
		}))
		return
	}
	s.serveWatch(w, r, q, selector, f)
}

func (s *scriptedServer) serveList(w http.ResponseWriter, q map[string][]string, selector fields.Selector) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.pods))
	for k, p := range s.pods {
		if selector.Matches(podFields(p)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	listRV := s.rv
	// Paging as an API server without watch cache; RV "0" ignores the limit
	// as the watch cache does. A continue token is "<listRV>/<last key>".
	if c := get("continue"); c != "" {
		rvText, after, _ := strings.Cut(c, "/")
		listRV, _ = strconv.ParseInt(rvText, 10, 64)
		if listRV < s.compacted {
			writeStatus(w, apierrors.NewResourceExpired("The provided continue parameter is too old"))
			return
		}
		i := sort.SearchStrings(keys, after)
		if i < len(keys) && keys[i] == after {
			i++
		}
		keys = keys[i:]
	}
	list := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	list.ResourceVersion = strconv.FormatInt(listRV, 10)
	limit, _ := strconv.Atoi(get("limit"))
	if limit > 0 && get("resourceVersion") != "0" && len(keys) > limit {
		keys = keys[:limit]
		list.Continue = fmt.Sprintf("%d/%s", listRV, keys[len(keys)-1])
	}
	for _, k := range keys {
		list.Items = append(list.Items, *s.pods[k])
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func (s *scriptedServer) serveWatch(w http.ResponseWriter, r *http.Request, q map[string][]string, selector fields.Selector, f *fault) {
	flusher := w.(http.Flusher)
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	rvText := get("resourceVersion")
	bookmarks := get("allowWatchBookmarks") == "true"
	initial := get("sendInitialEvents") == "true"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	send := func(typ watch.EventType, obj any) bool {
		raw, err := json.Marshal(obj)
		if err != nil {
			s.t.Errorf("encode %T: %v", obj, err)
			return false
		}
		if err := enc.Encode(metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	sendStatus := func(st *apierrors.StatusError) {
		status := st.Status()
		status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		send(watch.Error, &status)
	}
	bookmark := func(rv int64, initialEnd bool) bool {
		p := &v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}}
		p.ResourceVersion = strconv.FormatInt(rv, 10)
		if initialEnd {
			p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		}
		return send(watch.Bookmark, p)
	}
	if f != nil && f.event != nil {
		sendStatus(f.event)
		return
	}
	if f != nil && f.closeAtOnce {
		flusher.Flush()
		return
	}

	s.mu.Lock()
	var pos int64
	var snapshot []*v1.Pod
	switch {
	case rvText == "" || rvText == "0" || initial:
		// Current state as synthetic ADDED events, then what follows.
		// (sendInitialEvents from a given RV: state at least as new as it.)
		pos = s.rv
		keys := make([]string, 0, len(s.pods))
		for k := range s.pods {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			snapshot = append(snapshot, s.pods[k])
		}
	default:
		n, err := strconv.ParseInt(rvText, 10, 64)
		if err != nil {
			s.mu.Unlock()
			sendStatus(apierrors.NewBadRequest("bad resourceVersion " + rvText))
			return
		}
		if n < s.compacted {
			s.mu.Unlock()
			sendStatus(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", n, s.compacted)))
			return
		}
		pos = n
	}
	wc := &watchConn{ctl: make(chan watchCtl), done: make(chan struct{})}
	s.watchers[wc] = struct{}{}
	stopped := s.stopped
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, wc)
		s.mu.Unlock()
		close(wc.done)
	}()

	for _, p := range snapshot {
		if selector.Matches(podFields(p)) && !send(watch.Added, withKind(p)) {
			return
		}
	}
	if initial && !bookmark(pos, true) {
		return
	}
	// flush sends the history after pos; it returns the new pos.
	flush := func() (int64, <-chan struct{}, bool) {
		s.mu.Lock()
		var evs []histEvent
		for _, e := range s.history {
			if e.rv > pos {
				evs = append(evs, e)
			}
		}
		now, changed := s.rv, s.changed
		s.mu.Unlock()
		for _, e := range evs {
			if selector.Matches(podFields(e.pod)) && !send(e.typ, withKind(e.pod)) {
				return pos, changed, false
			}
		}
		return now, changed, true
	}
	for {
		var changed <-chan struct{}
		var ok bool
		if pos, changed, ok = flush(); !ok {
			return
		}
		select {
		case <-changed:
		case c := <-wc.ctl:
			switch {
			case c.close:
				return
			case c.errEvent != nil:
				sendStatus(c.errEvent)
				return
			case c.bookmark && bookmarks:
				if pos, _, ok = flush(); !ok || !bookmark(pos, false) {
					return
				}
			}
		case <-r.Context().Done():
			return
		case <-stopped:
			return
		}
	}
}

func withKind(p *v1.Pod) *v1.Pod {
	c := *p
	c.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	return &c
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_ = json.NewEncoder(w).Encode(&status)
}
