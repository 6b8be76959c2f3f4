package etcd

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
)

// Keys given to the store become <Prefix>/<key>; keys that leave the
// resource's prefix are refused.
func TestPrepareKey(t *testing.T) {
	s, err := New(Options{
		Client:         NewClient(nil),
		Codec:          codecs.LegacyCodec(),
		NewFunc:        func() runtime.Object { return &example.Pod{} },
		NewListFunc:    func() runtime.Object { return &example.PodList{} },
		Prefix:         "registry/",
		ResourcePrefix: "/pods",
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key       string
		recursive bool
		want      string // "" means an error
	}{
		{key: "/pods/ns/a", want: "/registry/pods/ns/a"},
		{key: "/pods/ns", recursive: true, want: "/registry/pods/ns/"},
		{key: "/pods", recursive: true, want: "/registry/pods/"},
		{key: "/pods/../secrets/x"},
		{key: "/pods/./a"},
		{key: ""},
		{key: "/"},
		{key: "/secrets/ns/a"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := s.prepareKey(tt.key, tt.recursive)
			switch {
			case tt.want == "" && err == nil:
				t.Fatalf("prepareKey(%q) = %q, want an error", tt.key, got)
			case tt.want != "" && (err != nil || got != tt.want):
				t.Fatalf("prepareKey(%q) = %q, %v; want %q", tt.key, got, err, tt.want)
			}
		})
	}
}

// New refuses options the store cannot work with.
func TestNewValidatesOptions(t *testing.T) {
	valid := func() Options {
		return Options{
			Client:         NewClient(nil),
			Codec:          codecs.LegacyCodec(),
			NewFunc:        func() runtime.Object { return &example.Pod{} },
			NewListFunc:    func() runtime.Object { return &example.PodList{} },
			ResourcePrefix: "/pods",
		}
	}
	tests := []struct {
		name   string
		modify func(*Options)
	}{
		{"no client", func(o *Options) { o.Client = nil }},
		{"no codec", func(o *Options) { o.Codec = nil }},
		{"no NewFunc", func(o *Options) { o.NewFunc = nil }},
		{"empty resource prefix", func(o *Options) { o.ResourcePrefix = "" }},
		{"root resource prefix", func(o *Options) { o.ResourcePrefix = "/" }},
		{"relative resource prefix", func(o *Options) { o.ResourcePrefix = "pods" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.modify(&o)
			if _, err := New(o); err == nil {
				t.Fatalf("New accepted options with %s", tt.name)
			}
		})
	}
	if _, err := New(valid()); err != nil {
		t.Fatalf("New refused valid options: %v", err)
	}
}
