package flowcontrol

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/utils/ptr"
)

func limitedPL(name string, shares, lendable int32, borrowing *int32, queuing *flowcontrolv1.QueuingConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
	lr := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	if queuing != nil {
		lr = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: queuing}
	}
	return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, UID: ktypes.UID("uid-" + name)},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares, LendablePercent: &lendable, BorrowingLimitPercent: borrowing, LimitResponse: lr}}}
}

func schema(name, pl string, precedence int32) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name, UID: ktypes.UID("uid-" + name)},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: pl}, MatchingPrecedence: precedence,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "*"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}}}}
}

// TestSeatSplit checks the seats of upstream's bootstrap levels for the
// default 600 seats, and of levels given by their shares and percents.
func TestSeatSplit(t *testing.T) {
	boot, err := digest(nil, append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...), 600)
	if err != nil {
		t.Fatal(err)
	}
	small, err := digest(nil, []*flowcontrolv1.PriorityLevelConfiguration{
		limitedPL("one", 1, 0, ptr.To(int32(0)), nil),
		limitedPL("big", 9, 50, nil, &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 2, QueueLengthLimit: 3}),
	}, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cfg                          *config
		level                        string
		nominal, lendable, borrowing int
	}{
		// ceil(600 × shares / 245): the suggested levels' shares sum
		// to 245 with catch-all's 5 (exempt has 0); lendable is
		// round(nominal × lendablePercent/100); no borrowingLimitPercent
		// is no limit (the server's seats).
		{boot, "exempt", 0, 0, 0},
		{boot, "catch-all", 13, 0, 600},
		{boot, "system", 74, 24, 600},
		{boot, "node-high", 98, 25, 600},
		{boot, "leader-election", 25, 0, 600},
		{boot, "workload-high", 98, 49, 600},
		{boot, "workload-low", 245, 221, 600},
		{boot, "global-default", 49, 25, 600},
		// Shares 1 and 9 of 20 seats plus the imagined mandatory
		// levels' (catch-all 5, exempt 0): ceil(20×1/15), ceil(20×9/15).
		{small, "one", 2, 0, 0},
		{small, "big", 12, 6, 20},
		{small, "catch-all", 7, 0, 20},
	} {
		lc := tt.cfg.levels[tt.level]
		if lc == nil {
			t.Errorf("%s: no level", tt.level)
			continue
		}
		if lc.nominal != tt.nominal || lc.lendable != tt.lendable || lc.borrowing != tt.borrowing {
			t.Errorf("%s: nominal %d lendable %d borrowing %d, want %d %d %d", tt.level, lc.nominal, lc.lendable, lc.borrowing, tt.nominal, tt.lendable, tt.borrowing)
		}
	}
}

// TestDigestOrderAndDangling checks the matching order (precedence, then
// name), dangling schemas left out, and the mandatory objects imagined.
func TestDigestOrderAndDangling(t *testing.T) {
	cfg, err := digest([]*flowcontrolv1.FlowSchema{
		schema("b", "lvl", 500), schema("a", "lvl", 500), schema("first", "lvl", 100), schema("lost", "missing", 1),
	}, []*flowcontrolv1.PriorityLevelConfiguration{limitedPL("lvl", 10, 0, nil, nil)}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fs := range cfg.flowSchemas {
		names = append(names, fs.Name)
	}
	want := []string{"exempt", "first", "a", "b", "catch-all"}
	if len(names) != len(want) {
		t.Fatalf("order %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("order %v, want %v", names, want)
		}
	}
	if !cfg.dangling["lost"] || cfg.dangling["a"] {
		t.Errorf("dangling %v, want lost only", cfg.dangling)
	}
	for _, l := range []string{"exempt", "catch-all", "lvl"} {
		if cfg.levels[l] == nil {
			t.Errorf("no level %s", l)
		}
	}
}

func TestStatusUpdates(t *testing.T) {
	ok, lost := schema("ok", "lvl", 10), schema("lost", "missing", 10)
	current := schema("current", "lvl", 10)
	current.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{danglingCondition(current, false)}
	stale := schema("stale", "missing", 10)
	stale.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{danglingCondition(stale, false)}
	cfg, _ := digest([]*flowcontrolv1.FlowSchema{ok, lost, current, stale}, []*flowcontrolv1.PriorityLevelConfiguration{limitedPL("lvl", 10, 0, nil, nil)}, 100)
	got := statusUpdates([]*flowcontrolv1.FlowSchema{ok, lost, current, stale}, cfg)
	for _, tt := range []struct {
		name   string
		status flowcontrolv1.ConditionStatus
		reason string
	}{
		{"ok", flowcontrolv1.ConditionFalse, "Found"},
		{"lost", flowcontrolv1.ConditionTrue, "NotFound"},
		{"stale", flowcontrolv1.ConditionTrue, "NotFound"},
	} {
		c, found := got[tt.name]
		if !found || c.Status != tt.status || c.Reason != tt.reason || c.Type != flowcontrolv1.FlowSchemaConditionDangling {
			t.Errorf("%s: %+v (found %v), want %s %s", tt.name, c, found, tt.status, tt.reason)
		}
	}
	if _, found := got["current"]; found {
		t.Errorf("current: written again although unchanged")
	}
	if want := `This FlowSchema references the PriorityLevelConfiguration object named "missing" but there is no such object`; got["lost"].Message != want {
		t.Errorf("message %q, want %q", got["lost"].Message, want)
	}
}
