package workload_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/workload"
)

// TestRunSmall runs every workload at a tiny size against a real Kite, in
// JSON and in protobuf with the raw watchers (the default), and in
// protobuf with client-go's, and checks that the counts add up, no
// watcher lost anything, the memory figures were read, the report says
// how the watchers decoded, and the namespace is gone afterwards.
func TestRunSmall(t *testing.T) {
	for _, tt := range []struct {
		contentType string
		decode      workload.Decode // "" for the default
		want        workload.Decode
	}{
		{"application/json", "", workload.RawDecode},
		{"application/vnd.kubernetes.protobuf", "", workload.RawDecode},
		{"application/vnd.kubernetes.protobuf", workload.ClientGoDecode, workload.ClientGoDecode},
	} {
		t.Run("contentType="+tt.contentType+"/decode="+string(tt.want), func(t *testing.T) {
			cfg := shared.RESTConfig()
			cfg.ContentType = tt.contentType
			opts := workload.Options{Pods: 50, Nodes: 5, Writers: 4, Watchers: 6, Updates: 12, Repeats: 2, DeliveryTimeout: time.Minute, Decode: tt.decode}
			report, err := workload.Run(t.Context(), cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]workload.Result{}
			for _, r := range report.Results {
				byName[r.Name] = r
			}
			wantOps := map[string]int{
				"create pods (4 writers)":                    50,
				"list all from cache (RV=0)":                 2,
				`list all, consistent (RV="")`:               2,
				"list spec.nodeName=X (RV=0)":                5,
				"paginate, limit 500":                        2,
				"watch fan-out, all namespaces (6 watchers)": 6 * 12,
				// Update k goes to pod k*50/12, on node (k*50/12)%5: node 0
				// gets 4 of the 12, the others 2 each; watchers 0..5 watch
				// nodes 0, 1, 2, 3, 4, 0.
				"watch fan-out, one node each (6 watchers)": 4 + 2 + 2 + 2 + 2 + 4,
				"informer sync":                      2,
				"delete all pods (deletecollection)": 1,
			}
			for name, ops := range wantOps {
				r, ok := byName[name]
				if !ok {
					t.Errorf("no result %q in %+v", name, report.Results)
					continue
				}
				if r.Ops != ops || r.Rate <= 0 || r.Duration <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
					t.Errorf("%s: %+v, want %d ops and positive figures", name, r, ops)
				}
				if d := r.Delivery; strings.HasPrefix(name, "watch") {
					if d == nil || d.Lost != 0 || d.Duplicates != 0 || d.OutOfOrder != 0 || d.Unexpected != 0 || d.Expected != ops {
						t.Errorf("%s: delivery %+v, want %d expected and nothing lost", name, d, ops)
					}
				}
			}
			if len(report.Results) != len(wantOps) {
				t.Errorf("%d results, want %d", len(report.Results), len(wantOps))
			}
			if m := report.Memory; m == nil || m.RSSAfter <= 0 || m.HeapAfter <= 0 || m.RSSEnd <= 0 || m.HeapEnd <= 0 {
				t.Errorf("memory %+v, want both metrics read from /metrics after the creates and at the end", m)
			}

			client := kubernetes.NewForConfigOrDie(cfg)
			if _, err := client.CoreV1().Namespaces().Get(t.Context(), report.Options.Namespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace %s after the run: %v, want NotFound", report.Options.Namespace, err)
			}

			var table, js bytes.Buffer
			if err := workload.WriteTable(&table, report); err != nil {
				t.Fatal(err)
			}
			if report.Options.Decode != tt.want {
				t.Errorf("report says decode %q, want %q", report.Options.Decode, tt.want)
			}
			for _, want := range []string{"WORKLOAD", "watch fan-out, one node each", "process_resident_memory_bytes", "at the end", "decode " + string(tt.want)} {
				if !strings.Contains(table.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, table.String())
				}
			}
			if err := workload.WriteJSON(&js, report); err != nil {
				t.Fatal(err)
			}
			var back workload.Report
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != len(report.Results) {
				t.Errorf("JSON output does not read back (%v):\n%s", err, js.String())
			}
			t.Logf("\n%s", table.String())
		})
	}
}

// TestRunRefusesAnExistingNamespace checks that Run never works in (and
// then deletes) a namespace it did not create.
func TestRunRefusesAnExistingNamespace(t *testing.T) {
	_, err := workload.Run(t.Context(), shared.RESTConfig(), workload.Options{Namespace: "default", Pods: 1, Nodes: 1, Watchers: 1, Updates: 1})
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Run in namespace default: %v, want AlreadyExists", err)
	}
	client := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	if _, err := client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace default after the run: %v", err)
	}
}
