package endpointslice

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"

	"github.com/kite-project/kite/controllers/controller"
)

// Apply writes plan through api for the object of key (a Service, or the
// mirrored Endpoints), as fieldManager: creations, updates, then
// deletions (on the slice's UID). expect is told first what the cache
// will see, and told again what it will never see when a write fails, so
// the key is held back only until its own writes arrive.
func Apply(ctx context.Context, api discoveryclient.EndpointSliceInterface, key, fieldManager string, plan Plan, expect *controller.Expectations) error {
	var dels []string
	for _, s := range plan.Delete {
		dels = append(dels, controller.Key(s))
	}
	expect.Expect(key, len(plan.Create), nil, dels)
	for i, s := range plan.Create {
		if _, err := api.Create(ctx, s, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			// The creations and deletions not made will never be seen.
			for range plan.Create[i:] {
				expect.Created(key, "")
			}
			for _, d := range dels {
				expect.Deleted(key, d)
			}
			return fmt.Errorf("create an EndpointSlice of %s: %w", key, err)
		}
	}
	for _, s := range plan.Update {
		if _, err := api.Update(ctx, s, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("update EndpointSlice %s/%s of %s: %w", s.Namespace, s.Name, key, err)
		}
	}
	for _, s := range plan.Delete {
		err := api.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			expect.Deleted(key, controller.Key(s))
			return fmt.Errorf("delete EndpointSlice %s/%s of %s: %w", s.Namespace, s.Name, key, err)
		}
	}
	return nil
}

// Changes is how many writes plan makes.
func (p Plan) Changes() int { return len(p.Create) + len(p.Update) + len(p.Delete) }
