package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/klog/v2"
)

// HealthCheck is one named check of /healthz, /livez or /readyz.
type HealthCheck struct {
	Name  string
	Check func(r *http.Request) error
}

func isHealthPath(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// serveHealth answers /healthz, /livez and /readyz as upstream's healthz
// package does: "ok", or with ?verbose one "[+]name ok" line per check;
// on failure 500 listing every check, the reason withheld from the
// client and logged. /<endpoint>/<check> runs one check; ?exclude=<name>
// skips one.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	parts := splitPath(r.URL.Path)
	endpoint := parts[0]
	checks := append([]HealthCheck{{Name: "ping", Check: func(*http.Request) error { return nil }}}, s.opts.Checks...)
	if endpoint == "readyz" {
		checks = append(checks, HealthCheck{Name: "shutdown", Check: func(*http.Request) error {
			if s.shuttingDown.Load() {
				return fmt.Errorf("process is shutting down")
			}
			return nil
		}})
		checks = append(checks, s.opts.ReadyChecks...)
	}
	if len(parts) == 2 {
		for _, c := range checks {
			if c.Name == parts[1] {
				if err := c.Check(r); err != nil {
					klog.V(2).InfoS("Health check failed", "endpoint", endpoint, "check", c.Name, "err", err)
					http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
					return
				}
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprint(w, "ok")
				return
			}
		}
		http.NotFound(w, r)
		return
	}
	if len(parts) > 2 {
		http.NotFound(w, r)
		return
	}
	excluded := map[string]bool{}
	for _, name := range r.URL.Query()["exclude"] {
		excluded[strings.TrimSpace(name)] = true
	}
	var out bytes.Buffer
	failed := false
	for _, c := range checks {
		if excluded[c.Name] {
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
			continue
		}
		if err := c.Check(r); err != nil {
			klog.V(2).InfoS("Health check failed", "endpoint", endpoint, "check", c.Name, "err", err)
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
			failed = true
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", out.String(), endpoint)
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%s%s check passed\n", out.String(), endpoint)
		return
	}
	fmt.Fprint(w, "ok")
}
