package controller

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
)

// TemplatePatch is upstream's getPatch of StatefulSets and DaemonSets:
// the part of the object a ControllerRevision records,
// {"spec":{"template":{...,"$patch":"replace"}}}. kubectl rollout undo
// applies it to the object as a strategic merge patch.
func TemplatePatch(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("revision patch: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("revision patch: %w", err)
	}
	spec, _ := raw["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	if template == nil {
		template = map[string]any{}
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// HashRevision is upstream's history.HashControllerRevision: FNV-32 of
// the revision's data and the collision count, safely encoded.
func HashRevision(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// RevisionName is upstream's ControllerRevisionName: <owner>-<hash>, the
// owner's name cut to 223 characters.
func RevisionName(owner, hash string) string {
	if len(owner) > 223 {
		owner = owner[:223]
	}
	return owner + "-" + hash
}

// OwnedRevisions are the revisions of all that owner controls, oldest
// (lowest revision number) first.
func OwnedRevisions(all []*appsv1.ControllerRevision, owner types.UID) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range all {
		if ref := metav1.GetControllerOf(r); ref != nil && ref.UID == owner {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *appsv1.ControllerRevision) int {
		if a.Revision != b.Revision {
			return cmp.Compare(a.Revision, b.Revision)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// SyncRevision is the update revision of upstream's
// getStatefulSetRevisions and constructHistory: build makes the revision
// of the owner's template (numbered after the newest of owned, named by
// the hash with collisions); the newest owned one with the same data is
// it, renumbered to the newest if it was older (a rollback); else it is
// created, and a name already taken by other data raises collisions
// (returned) and tries again.
func SyncRevision(ctx context.Context, client appsv1client.ControllerRevisionInterface, owner types.UID, owned []*appsv1.ControllerRevision,
	collisions int32, build func(revision int64, collisions *int32) (*appsv1.ControllerRevision, error)) (*appsv1.ControllerRevision, int32, error) {
	next := int64(1)
	if len(owned) > 0 {
		next = owned[len(owned)-1].Revision + 1
	}
	for {
		want, err := build(next, &collisions)
		if err != nil {
			return nil, 0, err
		}
		var equal *appsv1.ControllerRevision
		for _, r := range owned {
			if bytes.Equal(r.Data.Raw, want.Data.Raw) {
				equal = r
			}
		}
		switch {
		case equal != nil && equal == owned[len(owned)-1]:
			return equal, collisions, nil
		case equal != nil:
			cp := equal.DeepCopy()
			cp.Revision = next
			out, err := client.Update(ctx, cp, metav1.UpdateOptions{})
			if err != nil {
				return nil, 0, fmt.Errorf("controllerrevision %s/%s: %w", cp.Namespace, cp.Name, err)
			}
			return out, collisions, nil
		}
		created, err := client.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			existing, gerr := client.Get(ctx, want.Name, metav1.GetOptions{})
			if gerr != nil {
				return nil, 0, fmt.Errorf("controllerrevision %s/%s: %w", want.Namespace, want.Name, gerr)
			}
			if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == owner && bytes.Equal(existing.Data.Raw, want.Data.Raw) {
				return existing, collisions, nil // ours, not yet in the cache
			}
			collisions++
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("controllerrevision %s/%s: %w", want.Namespace, want.Name, err)
		}
		return created, collisions, nil
	}
}

// TruncateHistory is upstream's truncateHistory: owned revisions not
// live (in use by a pod, or the current or update revision) are deleted,
// oldest first, beyond limit.
func TruncateHistory(ctx context.Context, client appsv1client.ControllerRevisionInterface, owned []*appsv1.ControllerRevision, live map[string]bool, limit int) error {
	var old []*appsv1.ControllerRevision
	for _, r := range owned {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	for i := 0; i < len(old)-limit; i++ {
		if err := client.Delete(ctx, old[i].Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("controllerrevision %s/%s: %w", old[i].Namespace, old[i].Name, err)
		}
	}
	return nil
}
