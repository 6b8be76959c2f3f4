// Package options decodes the query of the pod subresources (pods/log,
// exec, attach, portforward) into their v1 options, as upstream's
// generated url.Values conversions do (k8s.io/api carries the types but
// not those conversions): the first value of a field counts, a boolean is
// false only for "0", "false" or "no", an empty number is unset, a
// malformed one an error; port lists may also be comma-separated.
//
// The API server decodes kubectl's query with it, and the agent the API
// server's.
package options

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func first(q url.Values, key string) (string, bool) {
	v, ok := q[key]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

func boolean(q url.Values, key string) bool {
	v, ok := first(q, key)
	if !ok {
		return false
	}
	return !(v == "0" || strings.EqualFold(v, "false") || strings.EqualFold(v, "no"))
}

func int64Ptr(q url.Values, key string) (*int64, error) {
	v, ok := first(q, key)
	if !ok || v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return &n, nil
}

// Log decodes a pods/log query.
func Log(q url.Values) (*v1.PodLogOptions, error) {
	o := &v1.PodLogOptions{}
	o.Container, _ = first(q, "container")
	o.Follow, o.Previous, o.Timestamps = boolean(q, "follow"), boolean(q, "previous"), boolean(q, "timestamps")
	o.InsecureSkipTLSVerifyBackend = boolean(q, "insecureSkipTLSVerifyBackend")
	var err error
	if o.SinceSeconds, err = int64Ptr(q, "sinceSeconds"); err != nil {
		return nil, err
	}
	if o.TailLines, err = int64Ptr(q, "tailLines"); err != nil {
		return nil, err
	}
	if o.LimitBytes, err = int64Ptr(q, "limitBytes"); err != nil {
		return nil, err
	}
	if v, ok := first(q, "sinceTime"); ok && v != "" {
		t := &metav1.Time{}
		if err := t.UnmarshalQueryParameter(v); err != nil {
			return nil, fmt.Errorf("sinceTime: %w", err)
		}
		o.SinceTime = t
	}
	if v, ok := first(q, "stream"); ok && v != "" {
		o.Stream = &v
	}
	return o, nil
}

// Exec decodes a pods/exec query.
func Exec(q url.Values) *v1.PodExecOptions {
	o := &v1.PodExecOptions{Command: q["command"]}
	o.Container, _ = first(q, "container")
	o.Stdin, o.Stdout, o.Stderr, o.TTY = boolean(q, "stdin"), boolean(q, "stdout"), boolean(q, "stderr"), boolean(q, "tty")
	return o
}

// Attach decodes a pods/attach query.
func Attach(q url.Values) *v1.PodAttachOptions {
	o := &v1.PodAttachOptions{}
	o.Container, _ = first(q, "container")
	o.Stdin, o.Stdout, o.Stderr, o.TTY = boolean(q, "stdin"), boolean(q, "stdout"), boolean(q, "stderr"), boolean(q, "tty")
	return o
}

// PortForward decodes a pods/portforward query.
func PortForward(q url.Values) (*v1.PodPortForwardOptions, error) {
	o := &v1.PodPortForwardOptions{}
	for _, v := range q["ports"] {
		for p := range strings.SplitSeq(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("ports: %w", err)
			}
			o.Ports = append(o.Ports, int32(n))
		}
	}
	return o, nil
}
