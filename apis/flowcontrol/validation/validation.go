// Package validation is the essential part of upstream's validation of
// flowcontrol.apiserver.k8s.io/v1 (k8s.io/kubernetes/pkg/apis/flowcontrol/validation),
// ported to the v1 types with its field paths and messages: the mandatory
// objects' fixed specs, precedences, references, subjects, rule verbs,
// enablement types, shares and queuing.
package validation

import (
	"fmt"
	"slices"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

const maxMatchingPrecedence = 10000

var (
	distinguisherMethods = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	subjectKinds         = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	verbs                = []string{"*", "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)

// ValidateFlowSchema is upstream's ValidateFlowSchema (metadata is the
// Store's).
func ValidateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	fldPath := field.NewPath("spec")
	spec := &fs.Spec
	var allErrs field.ErrorList
	switch {
	case spec.MatchingPrecedence <= 0:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("matchingPrecedence"), spec.MatchingPrecedence, "must be a positive value"))
	case spec.MatchingPrecedence > maxMatchingPrecedence:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("matchingPrecedence"), spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", maxMatchingPrecedence)))
	case spec.MatchingPrecedence == 1 && fs.Name != flowcontrolv1.FlowSchemaNameExempt:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("matchingPrecedence"), spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := spec.DistinguisherMethod; dm != nil && !slices.Contains(distinguisherMethods, string(dm.Type)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("distinguisherMethod").Child("type"), dm, distinguisherMethods))
	}
	if name := spec.PriorityLevelConfiguration.Name; name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("priorityLevelConfiguration").Child("name"), "must reference a priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("priorityLevelConfiguration").Child("name"), name, msg))
		}
	}
	for i := range spec.Rules {
		allErrs = append(allErrs, validateRule(&spec.Rules[i], fldPath.Child("rules").Index(i))...)
	}
	for _, mand := range bootstrap.MandatoryFlowSchemas {
		if mand.Name == fs.Name && !apiequality.Semantic.DeepEqual(fs.Spec, mand.Spec) {
			allErrs = append(allErrs, field.Invalid(fldPath, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
		}
	}
	return allErrs
}

// ValidateFlowSchemaUpdate is upstream's: the new object is valid.
func ValidateFlowSchemaUpdate(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
	return ValidateFlowSchema(fs)
}

func validateRule(rule *flowcontrolv1.PolicyRulesWithSubjects, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rule.Subjects) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("subjects"), "subjects must contain at least one value"))
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i, s := range rule.Subjects {
		p := fldPath.Child("subjects").Index(i)
		switch s.Kind {
		case flowcontrolv1.SubjectKindServiceAccount:
			if s.ServiceAccount == nil {
				allErrs = append(allErrs, field.Required(p.Child("serviceAccount"), "serviceAccount is required when subject kind is 'ServiceAccount'"))
			} else {
				if s.ServiceAccount.Name == "" {
					allErrs = append(allErrs, field.Required(p.Child("serviceAccount", "name"), ""))
				}
				if s.ServiceAccount.Namespace == "" {
					allErrs = append(allErrs, field.Required(p.Child("serviceAccount", "namespace"), "must specify namespace for service account"))
				}
			}
		case flowcontrolv1.SubjectKindUser:
			if s.User == nil {
				allErrs = append(allErrs, field.Required(p.Child("user"), "user is required when subject kind is 'User'"))
			} else if s.User.Name == "" {
				allErrs = append(allErrs, field.Required(p.Child("user", "name"), ""))
			}
		case flowcontrolv1.SubjectKindGroup:
			if s.Group == nil {
				allErrs = append(allErrs, field.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
			} else if s.Group.Name == "" {
				allErrs = append(allErrs, field.Required(p.Child("group", "name"), ""))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("kind"), s.Kind, subjectKinds))
		}
	}
	for i, r := range rule.ResourceRules {
		p := fldPath.Child("resourceRules").Index(i)
		allErrs = append(allErrs, validateVerbs(r.Verbs, p)...)
		if len(r.APIGroups) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
		if len(r.Namespaces) == 0 && !r.ClusterScope {
			allErrs = append(allErrs, field.Required(p.Child("namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"))
		}
	}
	for i, r := range rule.NonResourceRules {
		p := fldPath.Child("nonResourceRules").Index(i)
		allErrs = append(allErrs, validateVerbs(r.Verbs, p)...)
		if len(r.NonResourceURLs) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("nonResourceURLs"), "nonResourceURLs must contain at least one value"))
		}
	}
	return allErrs
}

func validateVerbs(vs []string, fldPath *field.Path) field.ErrorList {
	switch {
	case len(vs) == 0:
		return field.ErrorList{field.Required(fldPath.Child("verbs"), "verbs must contain at least one value")}
	case slices.Contains(vs, "*") && len(vs) > 1:
		return field.ErrorList{field.Invalid(fldPath.Child("verbs"), vs, "if '*' is present, must not specify other verbs")}
	}
	for _, v := range vs {
		if !slices.Contains(verbs, v) {
			return field.ErrorList{field.NotSupported(fldPath.Child("verbs"), vs, verbs)}
		}
	}
	return nil
}

// ValidatePriorityLevelConfiguration is upstream's (metadata is the
// Store's).
func ValidatePriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	fldPath := field.NewPath("spec")
	spec := &pl.Spec
	var allErrs field.ErrorList
	if (pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			allErrs = append(allErrs, shares(e.NominalConcurrencyShares, e.LendablePercent, fldPath.Child("exempt"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("exempt"), "must be nil if the type is Limited"))
		}
		if l := spec.Limited; l == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("limited"), "must not be empty when type is Limited"))
		} else {
			lp := fldPath.Child("limited")
			allErrs = append(allErrs, shares(l.NominalConcurrencyShares, l.LendablePercent, lp)...)
			if l.BorrowingLimitPercent != nil && *l.BorrowingLimitPercent < 0 {
				allErrs = append(allErrs, field.Invalid(lp.Child("borrowingLimitPercent"), *l.BorrowingLimitPercent, "if specified, must be a non-negative integer"))
			}
			allErrs = append(allErrs, validateLimitResponse(l.LimitResponse, lp.Child("limitResponse"))...)
		}
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), spec.Type, []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}))
	}
	for _, mand := range bootstrap.MandatoryPriorityLevelConfigurations {
		if mand.Name != pl.Name {
			continue
		}
		want, got := mand.Spec.DeepCopy(), spec.DeepCopy()
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			want.Exempt, got.Exempt = nil, nil
			if !apiequality.Semantic.DeepEqual(got, want) {
				allErrs = append(allErrs, field.Invalid(fldPath, pl.Spec, fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name)))
			}
		} else if !apiequality.Semantic.DeepEqual(got, want) {
			allErrs = append(allErrs, field.Invalid(fldPath, pl.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)))
		}
	}
	return allErrs
}

// ValidatePriorityLevelConfigurationUpdate is upstream's: the new object
// is valid.
func ValidatePriorityLevelConfigurationUpdate(pl, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	return ValidatePriorityLevelConfiguration(pl)
}

func shares(nominal, lendable *int32, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if nominal != nil && *nominal < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nominalConcurrencyShares"), *nominal, "must be a non-negative integer"))
	}
	if lendable != nil && (*lendable < 0 || *lendable > 100) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("lendablePercent"), *lendable, "must be between 0 and 100, inclusive"))
	}
	return allErrs
}

func validateLimitResponse(lr flowcontrolv1.LimitResponse, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if q := lr.Queuing; q == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited"))
		} else {
			qp := fldPath.Child("queuing")
			if q.QueueLengthLimit <= 0 {
				allErrs = append(allErrs, field.Invalid(qp.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
			}
			if q.Queues <= 0 {
				allErrs = append(allErrs, field.Invalid(qp.Child("queues"), q.Queues, "must be positive"))
			}
			if q.HandSize <= 0 {
				allErrs = append(allErrs, field.Invalid(qp.Child("handSize"), q.HandSize, "must be positive"))
			} else if q.HandSize > q.Queues {
				allErrs = append(allErrs, field.Invalid(qp.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
			}
		}
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), lr.Type, []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}))
	}
	return allErrs
}
