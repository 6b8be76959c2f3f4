package flowcontrol

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/flowcontrol/defaults"
)

// stored is boot as the API server stores it: defaulted, at generation,
// with the annotation set to annotation ("" removes it).
func storedPL(boot *flowcontrolv1.PriorityLevelConfiguration, generation int64, annotation string) *flowcontrolv1.PriorityLevelConfiguration {
	pl := boot.DeepCopy()
	defaults.PriorityLevelConfiguration(pl)
	pl.Generation = generation
	delete(pl.Annotations, flowcontrolv1.AutoUpdateAnnotationKey)
	if annotation != "" {
		pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = annotation
	}
	return pl
}

func TestEnsurePriorityLevel(t *testing.T) {
	workloadLow := bootstrap.SuggestedPriorityLevelConfigurationWorkloadLow
	changed := func(pl *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
		pl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(7))
		return pl
	}
	for _, tt := range []struct {
		name       string
		current    *flowcontrolv1.PriorityLevelConfiguration
		boot       *flowcontrolv1.PriorityLevelConfiguration
		mandatory  bool
		wantUpdate bool
		wantAnn    string
		wantShares int32 // of a limited level, when updated
	}{
		{"suggested, as bootstrapped", storedPL(workloadLow, 1, "true"), workloadLow, false, false, "", 0},
		{"suggested, auto-updated, spec changed: reverted", changed(storedPL(workloadLow, 2, "true")), workloadLow, false, true, "true", 100},
		{"suggested, annotation false: left alone", changed(storedPL(workloadLow, 2, "false")), workloadLow, false, false, "", 0},
		{"suggested, no annotation, generation 1: auto-updated", changed(storedPL(workloadLow, 1, "")), workloadLow, false, true, "true", 100},
		{"suggested, no annotation, changed since: marked false, kept", changed(storedPL(workloadLow, 3, "")), workloadLow, false, true, "false", 7},
		{"suggested, annotation not a boolean, generation 2: marked false", storedPL(workloadLow, 2, "maybe"), workloadLow, false, true, "false", 100},
		{"mandatory, annotation false: reverted anyway", changed(storedPL(bootstrap.MandatoryPriorityLevelConfigurationCatchAll, 2, "false")),
			bootstrap.MandatoryPriorityLevelConfigurationCatchAll, true, true, "true", 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ensurePL(tt.current, tt.boot, tt.mandatory)
			if (got != nil) != tt.wantUpdate {
				t.Fatalf("update %v, want %v", got != nil, tt.wantUpdate)
			}
			if got == nil {
				return
			}
			if a := got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey]; a != tt.wantAnn {
				t.Errorf("annotation %q, want %q", a, tt.wantAnn)
			}
			if s := *got.Spec.Limited.NominalConcurrencyShares; s != tt.wantShares {
				t.Errorf("shares %d, want %d", s, tt.wantShares)
			}
		})
	}
}

// TestEnsureExemptKeepsOperatorShares: the exempt level's shares and
// lendablePercent are the operator's to set (upstream's ensurer keeps
// them); the rest of its spec is reverted.
func TestEnsureExemptKeepsOperatorShares(t *testing.T) {
	cur := storedPL(bootstrap.MandatoryPriorityLevelConfigurationExempt, 2, "true")
	cur.Spec.Exempt.NominalConcurrencyShares = ptr.To(int32(10))
	cur.Spec.Exempt.LendablePercent = ptr.To(int32(50))
	if got := ensurePL(cur, bootstrap.MandatoryPriorityLevelConfigurationExempt, true); got != nil {
		t.Fatalf("exempt level with operator shares updated: %+v", got.Spec)
	}
}

func TestEnsureFlowSchema(t *testing.T) {
	boot := bootstrap.SuggestedFlowSchemaServiceAccounts
	stored := func(gen int64, ann string, precedence int32) *flowcontrolv1.FlowSchema {
		fs := boot.DeepCopy()
		fs.Generation = gen
		delete(fs.Annotations, flowcontrolv1.AutoUpdateAnnotationKey)
		if ann != "" {
			fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = ann
		}
		fs.Spec.MatchingPrecedence = precedence
		return fs
	}
	p := boot.Spec.MatchingPrecedence
	for _, tt := range []struct {
		name       string
		current    *flowcontrolv1.FlowSchema
		mandatory  bool
		wantUpdate bool
		wantPrec   int32
	}{
		{"as bootstrapped", stored(1, "true", p), false, false, 0},
		{"auto-updated and changed: reverted", stored(2, "true", 42), false, true, p},
		{"operator's: kept", stored(2, "false", 42), false, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ensureFS(tt.current, boot, tt.mandatory)
			if (got != nil) != tt.wantUpdate {
				t.Fatalf("update %v, want %v", got != nil, tt.wantUpdate)
			}
			if got != nil && got.Spec.MatchingPrecedence != tt.wantPrec {
				t.Errorf("precedence %d, want %d", got.Spec.MatchingPrecedence, tt.wantPrec)
			}
		})
	}
}

func TestUnwanted(t *testing.T) {
	names := map[string]bool{"catch-all": true}
	for _, tt := range []struct {
		name, annotation string
		want             bool
	}{
		{"catch-all", "true", false},
		{"retired-bootstrap", "true", true},
		{"operators-own", "", false},
		{"operators-copy", "false", false},
		{"malformed", "yes please", false},
	} {
		pl := &flowcontrolv1.PriorityLevelConfiguration{}
		pl.Name = tt.name
		if tt.annotation != "" {
			pl.Annotations = map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: tt.annotation}
		}
		if got := unwanted(pl, names); got != tt.want {
			t.Errorf("%s (%q): unwanted %v, want %v", tt.name, tt.annotation, got, tt.want)
		}
	}
}
