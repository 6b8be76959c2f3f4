package flowcontrol_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// dump GETs an APF debug endpoint as c and returns its status and rows,
// each row's columns (upstream's "a,\tb" cells, aligned by a tabwriter)
// trimmed.
func dump(t *testing.T, c *http.Client, path string) (int, [][]string) {
	t.Helper()
	resp, err := c.Get(shared.RESTConfig().Host + "/debug/api_priority_and_fairness/" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
		var cells []string
		for _, c := range strings.Split(line, ",") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return resp.StatusCode, rows
}

// rowsOf are the rows whose first cell is level.
func rowsOf(rows [][]string, level string) [][]string {
	var out [][]string
	for _, r := range rows[1:] {
		if r[0] == level {
			out = append(out, r)
		}
	}
	return out
}

// TestDebugDumpsAsUpstream: /debug/api_priority_and_fairness/dump_*
// answer with upstream's columns, and show a one-seat level with one
// request executing and one waiting in a queue: per level, per queue and
// per request (with ?includeRequestDetails=1 its user and attributes);
// the dump request itself runs in the exempt level. They are non-resource
// URLs behind authorization: a user without a grant gets 403.
func TestDebugDumpsAsUpstream(t *testing.T) {
	admin, err := restHTTP(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	level(t, "apf-debug", "apf-debug-user", 4)
	c := httpAs(t, "apf-debug-user")
	first := hold(t, c, "apf-debug-first")
	second := make(chan int, 1)
	go func() {
		resp, err := c.Get(shared.RESTConfig().Host + "/api/v1/namespaces/default/configmaps?limit=1")
		if err != nil {
			second <- 0
			return
		}
		resp.Body.Close()
		second <- resp.StatusCode
	}()
	var levels [][]string
	eventually(t, "the second request waiting in apf-debug", func() bool {
		_, levels = dump(t, admin, "dump_priority_levels")
		r := rowsOf(levels, "apf-debug")
		return len(r) == 1 && r[0][4] == "1"
	})

	t.Run("dump_priority_levels", func(t *testing.T) {
		want := []string{"PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests",
			"DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests"}
		if !slices.Equal(levels[0], want) {
			t.Errorf("header %q, want %q", levels[0], want)
		}
		r := rowsOf(levels, "apf-debug")[0]
		if got := r[:6]; !slices.Equal(got, []string{"apf-debug", "1", "false", "false", "1", "1"}) {
			t.Errorf("apf-debug: %q, want 1 active queue, not idle, not quiescing, 1 waiting, 1 executing", r)
		}
		if len(rowsOf(levels, "exempt")) != 1 || len(rowsOf(levels, "catch-all")) != 1 {
			t.Errorf("no row of exempt or catch-all:\n%q", levels)
		}
	})
	t.Run("dump_queues", func(t *testing.T) {
		code, rows := dump(t, admin, "dump_queues")
		want := []string{"PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse", "NextDispatchR",
			"InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum"}
		if code != http.StatusOK || !slices.Equal(rows[0], want) {
			t.Fatalf("%d, header %q, want %q", code, rows[0], want)
		}
		queues := rowsOf(rows, "apf-debug")
		pending := 0
		for i, q := range queues {
			if q[1] != strings.TrimSpace(string(rune('0'+i))) || !strings.HasSuffix(q[5], "ss") {
				t.Errorf("queue %d: %q", i, q)
			}
			if q[2] == "1" {
				pending++
				if q[6] != "1" || q[7] != "1" {
					t.Errorf("the waiting request's queue: %q, want 1 initial and 1 max seat", q)
				}
			}
		}
		if len(queues) != 4 || pending != 1 {
			t.Errorf("apf-debug queues %q, want 4, one with a pending request", queues)
		}
	})
	t.Run("dump_requests", func(t *testing.T) {
		code, rows := dump(t, admin, "dump_requests?includeRequestDetails=1")
		want := []string{"PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher", "ArriveTime",
			"InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime",
			"UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource"}
		if code != http.StatusOK || !slices.Equal(rows[0], want) {
			t.Fatalf("%d, header %q, want %q", code, rows[0], want)
		}
		var waiting, executing []string
		for _, r := range rowsOf(rows, "apf-debug") {
			if r[3] == "-1" {
				executing = r
			} else {
				waiting = r
			}
		}
		if waiting == nil || waiting[1] != "apf-debug" || waiting[3] != "0" || waiting[4] != "apf-debug-user" ||
			!slices.Equal(waiting[10:], []string{"apf-debug-user", "list", "/api/v1/namespaces/default/configmaps", "default", "", "v1", "configmaps", ""}) {
			t.Errorf("waiting request %q, want the list of apf-debug-user first in its queue", waiting)
		}
		if executing == nil || !slices.Equal(executing[10:13], []string{"apf-debug-user", "create", "/api/v1/namespaces/default/configmaps"}) {
			t.Errorf("executing request %q, want the create of apf-debug-user", executing)
		}
		exempt := rowsOf(rows, "exempt")
		if !slices.ContainsFunc(exempt, func(r []string) bool {
			return r[11] == "get" && r[12] == "/debug/api_priority_and_fairness/dump_requests"
		}) {
			t.Errorf("exempt rows %q, want the dump request itself", exempt)
		}
		_, plain := dump(t, admin, "dump_requests")
		if len(plain[0]) != 10 {
			t.Errorf("without includeRequestDetails: header %q, want 10 columns", plain[0])
		}
	})
	t.Run("authorized as a non-resource URL", func(t *testing.T) {
		if code, _ := dump(t, httpAs(t, "apf-debug-stranger"), "dump_priority_levels"); code != http.StatusForbidden {
			t.Errorf("a user without a grant: %d, want 403", code)
		}
	})

	if code := first.finish(t); code != http.StatusCreated {
		t.Errorf("first request: %d, want 201", code)
	}
	if code := <-second; code != http.StatusOK {
		t.Errorf("queued request: %d, want 200", code)
	}
}
