package crd

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func crdNamed(name, group string, names apiextensionsv1.CustomResourceDefinitionNames, accepted *apiextensionsv1.CustomResourceDefinitionNames) apiextensionsv1.CustomResourceDefinition {
	crd := apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Names: names},
	}
	if accepted != nil {
		crd.Status.AcceptedNames = *accepted
	}
	return crd
}

func TestAcceptNamesRefusesConflictsWithinAGroup(t *testing.T) {
	widgets := apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList", ShortNames: []string{"wd"}}
	existing := crdNamed("widgets.a.io", "a.io", widgets, &widgets)
	tests := []struct {
		name       string
		group      string
		names      apiextensionsv1.CustomResourceDefinitionNames
		wantStatus apiextensionsv1.ConditionStatus
		wantReason string
		wantMsg    string
		wantPlural string
	}{
		{"no conflict", "a.io", apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found", "gadgets"},
		{"same names in another group", "b.io", widgets, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found", "widgets"},
		{"plural", "a.io", apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "w2", Kind: "W2", ListKind: "W2List"},
			apiextensionsv1.ConditionFalse, "PluralConflict", `"widgets" is already in use`, ""},
		{"short name", "a.io", apiextensionsv1.CustomResourceDefinitionNames{Plural: "w3s", Singular: "w3", Kind: "W3", ListKind: "W3List", ShortNames: []string{"wd"}},
			apiextensionsv1.ConditionFalse, "ShortNamesConflict", `"wd" is already in use`, "w3s"},
		{"kind", "a.io", apiextensionsv1.CustomResourceDefinitionNames{Plural: "w4s", Singular: "w4", Kind: "Widget", ListKind: "W4List"},
			apiextensionsv1.ConditionFalse, "KindConflict", `"Widget" is already in use`, "w4s"},
		{"list kind", "a.io", apiextensionsv1.CustomResourceDefinitionNames{Plural: "w5s", Singular: "w5", Kind: "W5", ListKind: "WidgetList"},
			apiextensionsv1.ConditionFalse, "ListKindConflict", `"WidgetList" is already in use`, "w5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := crdNamed("new."+tt.group, tt.group, tt.names, nil)
			names, accepted, established := acceptNames(&crd, []apiextensionsv1.CustomResourceDefinition{existing, crd})
			if accepted.Status != tt.wantStatus || accepted.Reason != tt.wantReason || accepted.Message != tt.wantMsg {
				t.Errorf("NamesAccepted %s/%s %q, want %s/%s %q", accepted.Status, accepted.Reason, accepted.Message, tt.wantStatus, tt.wantReason, tt.wantMsg)
			}
			if names.Plural != tt.wantPlural {
				t.Errorf("accepted plural %q, want %q (a conflicting name keeps its old accepted value)", names.Plural, tt.wantPlural)
			}
			wantEstablished := "NotAccepted"
			if tt.wantStatus == apiextensionsv1.ConditionTrue {
				wantEstablished = "Installing"
			}
			if established.Status != apiextensionsv1.ConditionFalse || established.Reason != wantEstablished {
				t.Errorf("Established %s/%s, want False/%s", established.Status, established.Reason, wantEstablished)
			}
		})
	}
}

func TestEstablishOnceNamesAreAccepted(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if establish(crd) {
		t.Fatal("established without NamesAccepted")
	}
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue}}
	if !establish(crd) {
		t.Fatal("not established with NamesAccepted")
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && (c.Status != apiextensionsv1.ConditionTrue || c.Reason != "InitialNamesAccepted") {
			t.Errorf("Established %+v", c)
		}
	}
	if establish(crd) {
		t.Error("established twice")
	}
}
