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
	withEphemeral := func(p *v1.Pod, names ...string) *v1.Pod {
		for _, n := range names {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n}})
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
		{"several and inits, none named: one list, inits first", pod([]string{"a", "b"}, []string{"i"}), "", "", "a container name must be specified for pod p, choose one of: [i a b]"},
		{"several, inits and ephemeral, none named: all in upstream's order", withEphemeral(pod([]string{"a", "b"}, []string{"i"}), "dbg"), "", "", "a container name must be specified for pod p, choose one of: [i a b dbg]"},
		{"an ephemeral container", withEphemeral(pod([]string{"a", "b"}, nil), "dbg"), "dbg", "dbg", ""},
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

func TestPodProxyLocation(t *testing.T) {
	pod := func(ips []string, ports ...int32) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}}
		for _, port := range ports {
			p.Spec.Containers[1].Ports = append(p.Spec.Containers[1].Ports, v1.ContainerPort{ContainerPort: port})
		}
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, v1.PodIP{IP: ip})
		}
		return p
	}
	cases := []struct {
		name, scheme, port string
		pod                *v1.Pod
		want, err          string
	}{
		{"the port asked for", "", "8080", pod([]string{"10.1.0.5"}, 80), "//10.1.0.5:8080", ""},
		{"the first declared port", "", "", pod([]string{"10.1.0.5"}, 81, 82), "//10.1.0.5:81", ""},
		{"no port at all", "https", "", pod([]string{"10.1.0.5"}), "https://10.1.0.5", ""},
		{"the first IP", "http", "1", pod([]string{"10.1.0.5", "fd00::5"}), "http://10.1.0.5:1", ""},
		{"IPv6 with a port", "", "80", pod([]string{"fd00::5"}), "//[fd00::5]:80", ""},
		{"IPv6 without", "", "", pod([]string{"fd00::5"}), "//[fd00::5]", ""},
		{"loopback", "", "80", pod([]string{"127.0.0.1"}), "", "address not allowed"},
		{"link-local", "", "80", pod([]string{"169.254.169.254"}), "", "address not allowed"},
		{"no IP yet", "", "80", pod(nil), "", "address not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := podProxyLocation(c.pod, c.scheme, c.port)
			if c.err != "" {
				if !apierrors.IsBadRequest(err) || err.Error() != c.err {
					t.Errorf("error %v, want BadRequest %q", err, c.err)
				}
				return
			}
			if err != nil || got.String() != c.want {
				t.Errorf("= %v, %v; want %s", got, err, c.want)
			}
		})
	}
}
