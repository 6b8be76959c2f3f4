package builtin

import (
	"context"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/registry"
)

// ComponentCheck tells the health of one component of the control plane,
// as upstream's componentstatus.Server probes it: healthy with a message
// ("ok"), failing with a message (a /healthz body), or unknown with the
// error that kept it from being asked.
type ComponentCheck func(ctx context.Context) ComponentHealth

// ComponentHealth is one answer of a ComponentCheck.
type ComponentHealth struct {
	// Status is True (healthy), False (failing) or Unknown.
	Status  v1.ConditionStatus
	Message string
	Err     error
}

// WithComponentStatuses gives componentstatuses the components it
// reports, by name ("scheduler", "controller-manager", "etcd-0"): the
// server's own knowledge of them. Without it the list is empty.
func WithComponentStatuses(components map[string]ComponentCheck) Option {
	return func(o *options) { o.components = components }
}

// ComponentStatuses returns the strategy of core/v1 componentstatuses,
// upstream's pkg/registry/core/componentstatus: not stored, each read asks
// the components now; get and list only; deprecated since 1.19, which
// every request is told as upstream's deprecation filter tells it.
func ComponentStatuses(components map[string]ComponentCheck) *registry.Strategy {
	return &registry.Strategy{
		Kind:         v1.SchemeGroupVersion.WithKind("ComponentStatus"),
		Resource:     "componentstatuses",
		SingularName: "componentstatus",
		ShortNames:   []string{"cs"},
		New:          func() runtime.Object { return &v1.ComponentStatus{} },
		NewList:      func() runtime.Object { return &v1.ComponentStatusList{} },
		Warnings:     []string{"v1 ComponentStatus is deprecated in v1.19+"},
		Computed: &registry.Computed{
			Get: func(ctx context.Context, name string) (runtime.Object, error) {
				check, ok := components[name]
				if !ok {
					return nil, apierrors.NewNotFound(v1.Resource("componentstatus"), name)
				}
				return componentStatus(name, check(ctx)), nil
			},
			List: func(ctx context.Context) (runtime.Object, error) {
				return listComponentStatuses(ctx, components), nil
			},
		},
	}
}

// listComponentStatuses asks every component at once, as upstream does
// (one slow component delays the list by its own time only), and lists
// them by name.
func listComponentStatuses(ctx context.Context, components map[string]ComponentCheck) *v1.ComponentStatusList {
	list := &v1.ComponentStatusList{Items: make([]v1.ComponentStatus, 0, len(components))}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, check := range components {
		wg.Go(func() {
			cs := componentStatus(name, check(ctx))
			mu.Lock()
			list.Items = append(list.Items, *cs)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list
}

// componentStatus is upstream's getComponentStatus: one Healthy
// condition.
func componentStatus(name string, h ComponentHealth) *v1.ComponentStatus {
	c := v1.ComponentCondition{Type: v1.ComponentHealthy, Status: h.Status, Message: h.Message}
	if h.Err != nil {
		c.Error = h.Err.Error()
	}
	cs := &v1.ComponentStatus{Conditions: []v1.ComponentCondition{c}}
	cs.Name = name
	return cs
}
