// Package pdb holds what both the eviction subresource and the disruption
// controller say about a PodDisruptionBudget's DisruptionAllowed
// condition (upstream's k8s.io/component-helpers/apps/poddisruptionbudget).
package pdb

import (
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpdateDisruptionAllowedCondition sets the DisruptionAllowed condition
// from status.disruptionsAllowed: True with SufficientPods when some
// disruption is allowed, False with InsufficientPods otherwise.
func UpdateDisruptionAllowedCondition(pdb *policyv1.PodDisruptionBudget) {
	if pdb.Status.Conditions == nil {
		pdb.Status.Conditions = []metav1.Condition{}
	}
	c := metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Reason:             policyv1.InsufficientPodsReason,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: pdb.Status.ObservedGeneration,
	}
	if pdb.Status.DisruptionsAllowed > 0 {
		c.Reason, c.Status = policyv1.SufficientPodsReason, metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&pdb.Status.Conditions, c)
}

// ConditionsAreUpToDate says whether the DisruptionAllowed condition
// agrees with status.disruptionsAllowed for the current generation.
func ConditionsAreUpToDate(pdb *policyv1.PodDisruptionBudget) bool {
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil || pdb.Status.ObservedGeneration != pdb.Generation {
		return false
	}
	if pdb.Status.DisruptionsAllowed > 0 {
		return c.Status == metav1.ConditionTrue && c.Reason == policyv1.SufficientPodsReason
	}
	return c.Status == metav1.ConditionFalse && c.Reason == policyv1.InsufficientPodsReason
}
