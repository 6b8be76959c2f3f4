package options

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// FuzzManifestURLHeader parses two --manifest-url-header flags as the
// command line does. A refused value changes nothing (the headers are what
// the first flag gave); accepted headers print (String) as a value that
// parses back to the same headers; and Complete either refuses them with
// an error or leaves headers an HTTP request can carry.
func FuzzManifestURLHeader(f *testing.F) {
	f.Add("Authorization:Bearer abc", "X-Node: node1")
	f.Fuzz(func(t *testing.T, first, second string) {
		var headers map[string][]string
		fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		fs.Var(newHeaderValue(&headers), "manifest-url-header", "")
		errFirst := fs.Set("manifest-url-header", first)
		before := cloneHeaders(headers)
		if errFirst != nil && headers != nil {
			t.Fatalf("refused value %q set headers %v", first, headers)
		}
		if err := fs.Set("manifest-url-header", second); err != nil && !reflect.DeepEqual(headers, before) {
			t.Fatalf("refused value %q changed headers from %v to %v", second, before, headers)
		}
		if headers == nil {
			return
		}
		var again map[string][]string
		printed := newHeaderValue(&headers).String()
		if err := newHeaderValue(&again).Set(printed); err != nil || !reflect.DeepEqual(again, headers) {
			t.Fatalf("headers %q printed as %q parse back as %q (%v)", headers, printed, again, err)
		}

		o := New()
		ofs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		o.AddFlags(ofs)
		if err := ofs.Parse([]string{"--manifest-url=http://127.0.0.1:8080/pods", "--manifest-url-header=" + printed}); err != nil {
			t.Fatalf("parse %q: %v", printed, err)
		}
		if _, err := o.Complete(ofs); err != nil {
			return
		}
		if !reflect.DeepEqual(o.Config.StaticPodURLHeader, headers) {
			t.Fatalf("Complete kept headers %q, want %q", o.Config.StaticPodURLHeader, headers)
		}
	})
}

func cloneHeaders(h map[string][]string) map[string][]string {
	if h == nil {
		return nil
	}
	out := make(map[string][]string, len(h))
	for k, v := range h {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// FuzzKubeletConfiguration reads KubeletConfiguration files. A refused
// file returns the zero configuration; an accepted one, written back as
// JSON or YAML, reads back equal and without warnings; and loading it as
// --config through Complete either fails or gives the same configuration.
func FuzzKubeletConfiguration(f *testing.F) {
	f.Add([]byte(fileConfig))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, warnings, err := ParseConfig(data)
		if err != nil {
			if !reflect.DeepEqual(cfg, AgentConfiguration{}) || warnings != nil {
				t.Fatalf("refused file gave %+v, warnings %v", cfg, warnings)
			}
			return
		}
		js, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("encode %+v: %v", cfg, err)
		}
		ys, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("encode %+v as YAML: %v", cfg, err)
		}
		for form, written := range map[string][]byte{"JSON": js, "YAML": ys} {
			back, warnings, err := ParseConfig(written)
			if err != nil || warnings != nil || !reflect.DeepEqual(back, cfg) {
				t.Fatalf("configuration %+v written as %s reads back as %+v, warnings %v, error %v:\n%s", cfg, form, back, warnings, err, written)
			}
		}

		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		o := New()
		fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--config=" + path}); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Complete(fs); err != nil {
			return
		}
		if !reflect.DeepEqual(o.Config, cfg) {
			t.Fatalf("--config gave %+v, ParseConfig %+v", o.Config, cfg)
		}
	})
}
