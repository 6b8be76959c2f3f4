package nodeproxy

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestContainerFor(t *testing.T) {
	pod := func(containers, inits []string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
		}
		for _, c := range inits {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: c})
		}
		return p
	}
	cases := []struct {
		name      string
		pod       *v1.Pod
		container string
		want      string
		err       string
	}{
		{"the only one by default", pod([]string{"a"}, nil), "", "a", ""},
		{"named", pod([]string{"a", "b"}, nil), "b", "b", ""},
		{"an init container", pod([]string{"a"}, []string{"init"}), "init", "init", ""},
		{"several, none named", pod([]string{"a", "b"}, nil), "", "", "a container name must be specified for pod p, choose one of: [a b]"},
		{"several and inits, none named", pod([]string{"a", "b"}, []string{"i"}), "", "", "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"},
		{"unknown", pod([]string{"a"}, nil), "z", "", "container z is not valid for pod p"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := containerFor(c.pod, c.container)
			if c.err != "" {
				if !apierrors.IsBadRequest(err) || err.Error() != c.err {
					t.Errorf("error %v, want BadRequest %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("= %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestValidateLogOptions(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		name string
		opts v1.PodLogOptions
		want string
	}{
		{"nothing", v1.PodLogOptions{}, ""},
		{"all fine", v1.PodLogOptions{TailLines: ptr.To[int64](0), LimitBytes: ptr.To[int64](1), SinceSeconds: ptr.To[int64](1)}, ""},
		{"negative tail", v1.PodLogOptions{TailLines: ptr.To[int64](-1)}, "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{"zero limit", v1.PodLogOptions{LimitBytes: ptr.To[int64](0)}, "limitBytes: Invalid value: 0: must be greater than 0"},
		{"zero since", v1.PodLogOptions{SinceSeconds: ptr.To[int64](0)}, "sinceSeconds: Invalid value: 0: must be greater than 0"},
		{"both sinces", v1.PodLogOptions{SinceSeconds: ptr.To[int64](5), SinceTime: &now}, "[]: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"},
	}
	for _, c := range cases {
		errs := ValidateLogOptions(&c.opts)
		got := errs.ToAggregate()
		if (got == nil) != (c.want == "") || (got != nil && got.Error() != c.want) {
			t.Errorf("%s: %v, want %q", c.name, got, c.want)
		}
	}
}
