package listwatch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// list fetches every object, replaces the store's content with them and
// records the list's resourceVersion. A list at a resourceVersion that is
// Expired or too large is retried at once at "" (a consistent read), and
// the lists after that start at "" until one succeeds.
func (r *Reflector) list(ctx context.Context) error {
	rv := r.relistResourceVersion()
	listRV, items, paginated, err := r.listPages(ctx, rv)
	if isExpired(err) || isTooLargeResourceVersion(err) {
		klog.FromContext(ctx).V(4).Info("List resourceVersion unusable, listing at the latest", "resourceVersion", rv, "err", err)
		r.mu.Lock()
		r.lastRVUnavailable = true
		r.mu.Unlock()
		rv = ""
		listRV, items, paginated, err = r.listPages(ctx, rv)
	}
	if err != nil {
		return fmt.Errorf("list %s at resourceVersion %q: %w", r.name, rv, err)
	}
	if err := r.store.Replace(items, listRV); err != nil {
		return fmt.Errorf("replace store of %s with %d objects at resourceVersion %q: %w", r.name, len(items), listRV, err)
	}
	if rv == "0" && paginated {
		r.mu.Lock()
		r.paginated = true
		r.mu.Unlock()
	}
	r.listed(ctx, listRV, len(items))
	return nil
}

// listed records a list, or streaming list, written to the store at rv.
func (r *Reflector) listed(ctx context.Context, rv string, objects int) {
	r.mu.Lock()
	r.lastRV = rv
	r.lastRVUnavailable = false
	r.mu.Unlock()
	r.syncOnce.Do(func() { close(r.synced) })
	klog.FromContext(ctx).V(2).Info("Caches populated", "resourceVersion", rv, "objects", objects)
}

// listPages lists at rv, page by page when rv is "" or "0" (a list at a
// given resourceVersion is asked for whole, so that an API server serves
// it from its watch cache), as client-go's Reflector and pager do. When a
// continue token expires mid-way it lists again whole at rv.
func (r *Reflector) listPages(ctx context.Context, rv string) (listRV string, items []runtime.Object, paginated bool, err error) {
	opts := metav1.ListOptions{ResourceVersion: rv}
	r.mu.RLock()
	paged := r.pageSize > 0 && (rv == "" || rv == "0" || r.paginated)
	r.mu.RUnlock()
	if paged {
		opts.Limit = r.pageSize
	}
	for {
		obj, err := r.lw.List(ctx, opts)
		if err != nil {
			if opts.Continue == "" || !isExpired(err) {
				return "", nil, paginated, err
			}
			// The first page's snapshot was compacted away while paging.
			opts = metav1.ListOptions{ResourceVersion: rv}
			items = nil
			continue
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return "", nil, paginated, fmt.Errorf("list result %T is not a list: %w", obj, err)
		}
		page, err := meta.ExtractListWithAlloc(obj)
		if err != nil {
			return "", nil, paginated, fmt.Errorf("extract items of %T: %w", obj, err)
		}
		if opts.Continue == "" {
			// The first page's resourceVersion is the whole list's.
			listRV = lm.GetResourceVersion()
		}
		items = append(items, page...)
		if lm.GetContinue() == "" {
			return listRV, items, paginated, nil
		}
		paginated = true
		// A continue token carries its own resourceVersion; the API server
		// refuses both together.
		opts.Continue = lm.GetContinue()
		opts.ResourceVersion = ""
		opts.ResourceVersionMatch = ""
	}
}
