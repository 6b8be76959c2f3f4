package controller

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDecide(t *testing.T) {
	gone := metav1.NewTime(time.Unix(1e9, 0))
	owner := func(deleting bool) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "rs-uid"}}
		if deleting {
			rs.DeletionTimestamp = &gone
		}
		return rs
	}
	kind := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	pod := func(ns string, controller types.UID, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}
		if controller != "" {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "x", UID: controller}}, kind)}
		}
		if deleting {
			p.DeletionTimestamp = &gone
		}
		return p
	}
	tests := []struct {
		name          string
		ownerDeleting bool
		obj           *corev1.Pod
		matches       bool
		want          Claim
	}{
		{"its own, matching", false, pod("ns", "rs-uid", false), true, Own},
		{"its own, matching, while it is deleted", true, pod("ns", "rs-uid", false), true, Own},
		{"its own, no longer matching: released", false, pod("ns", "rs-uid", false), false, Release},
		{"its own, no longer matching, while it is deleted: left", true, pod("ns", "rs-uid", false), false, Skip},
		{"another controller's, matching", false, pod("ns", "other", false), true, Skip},
		{"an orphan it matches: adopted", false, pod("ns", "", false), true, Adopt},
		{"an orphan it does not match", false, pod("ns", "", false), false, Skip},
		{"an orphan, while it is deleted", true, pod("ns", "", false), true, Skip},
		{"an orphan being deleted", false, pod("ns", "", true), true, Skip},
		{"an orphan of another namespace", false, pod("other", "", false), true, Skip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(owner(tc.ownerDeleting), tc.obj, tc.matches); got != tc.want {
				t.Fatalf("= %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOwnerResolvesOnlyTheReferencedUID(t *testing.T) {
	kind := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	cached := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "now"}}
	cache := mapGetter{"ns/rs": cached}
	ref := func(k, apiVersion string, uid types.UID) *metav1.OwnerReference {
		return &metav1.OwnerReference{Kind: k, APIVersion: apiVersion, Name: "rs", UID: uid}
	}
	tests := []struct {
		name string
		ref  *metav1.OwnerReference
		want bool
	}{
		{"the cached one", ref("ReplicaSet", "apps/v1", "now"), true},
		{"a former one of the same name", ref("ReplicaSet", "apps/v1", "before"), false},
		{"another kind", ref("Deployment", "apps/v1", "now"), false},
		{"another group", ref("ReplicaSet", "extensions/v1beta1", "now"), false},
		{"none", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := Owner[*appsv1.ReplicaSet](cache, "ns", tc.ref, kind); ok != tc.want {
				t.Fatalf("= %v, want %v", ok, tc.want)
			}
		})
	}
}

type mapGetter map[string]*appsv1.ReplicaSet

func (m mapGetter) Get(key string) (*appsv1.ReplicaSet, bool) { rs, ok := m[key]; return rs, ok }

func TestSelecting(t *testing.T) {
	sel := func(l map[string]string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: l}}}
	}
	web, all, db := sel(map[string]string{"app": "web"}), sel(nil), sel(map[string]string{"app": "db"})
	got := Selecting([]*appsv1.ReplicaSet{web, all, db}, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, map[string]string{"app": "web", "x": "y"})
	if len(got) != 1 || got[0] != web {
		t.Fatalf("= %v, want only the web selector (an empty one selects nothing)", got)
	}
}
