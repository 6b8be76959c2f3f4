package options

import (
	"net/url"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestLog(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	cases := []struct {
		query string
		want  *v1.PodLogOptions
		bad   bool
	}{
		{"", &v1.PodLogOptions{}, false},
		{"container=c&follow=true&previous=1&timestamps=yes", &v1.PodLogOptions{Container: "c", Follow: true, Previous: true, Timestamps: true}, false},
		{"follow=false&previous=0&timestamps=no", &v1.PodLogOptions{}, false},
		{"follow=FALSE", &v1.PodLogOptions{}, false},
		{"follow=", &v1.PodLogOptions{Follow: true}, false}, // present but empty is true, as upstream
		{"tailLines=10&limitBytes=5&sinceSeconds=60", &v1.PodLogOptions{TailLines: ptr.To[int64](10), LimitBytes: ptr.To[int64](5), SinceSeconds: ptr.To[int64](60)}, false},
		{"tailLines=", &v1.PodLogOptions{}, false},
		{"tailLines=2&tailLines=3", &v1.PodLogOptions{TailLines: ptr.To[int64](2)}, false},
		{"sinceTime=2026-12-01T10:00:00Z", &v1.PodLogOptions{SinceTime: &since}, false},
		{"stream=Stderr", &v1.PodLogOptions{Stream: ptr.To("Stderr")}, false},
		{"tailLines=ten", nil, true},
		{"sinceTime=yesterday", nil, true},
	}
	for _, c := range cases {
		q, _ := url.ParseQuery(c.query)
		got, err := Log(q)
		if (err != nil) != c.bad {
			t.Errorf("Log(%q) error %v, want bad %v", c.query, err, c.bad)
			continue
		}
		if got != nil && got.SinceTime != nil {
			got.SinceTime = &metav1.Time{Time: got.SinceTime.UTC()} // parsed in the local zone
		}
		if !c.bad && !reflect.DeepEqual(got, c.want) {
			t.Errorf("Log(%q) = %+v, want %+v", c.query, got, c.want)
		}
	}
}

func TestExecAttachPortForward(t *testing.T) {
	q, _ := url.ParseQuery("command=sh&command=-c&command=echo+ok&stdin=true&stdout=1&stderr=false&tty=true&container=c")
	if got, want := Exec(q), (&v1.PodExecOptions{Command: []string{"sh", "-c", "echo ok"}, Container: "c", Stdin: true, Stdout: true, TTY: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("Exec = %+v, want %+v", got, want)
	}
	if got, want := Attach(q), (&v1.PodAttachOptions{Container: "c", Stdin: true, Stdout: true, TTY: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("Attach = %+v, want %+v", got, want)
	}
	cases := []struct {
		query string
		want  []int32
		bad   bool
	}{
		{"", nil, false},
		{"ports=80", []int32{80}, false},
		{"ports=80,8080&ports=9090", []int32{80, 8080, 9090}, false},
		{"ports=http", nil, true},
	}
	for _, c := range cases {
		q, _ := url.ParseQuery(c.query)
		got, err := PortForward(q)
		if (err != nil) != c.bad || (!c.bad && !reflect.DeepEqual(got.Ports, c.want)) {
			t.Errorf("PortForward(%q) = %+v, %v", c.query, got, err)
		}
	}
}
