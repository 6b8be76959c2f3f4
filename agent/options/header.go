package options

import (
	"fmt"
	"sort"
	"strings"
)

// headerValue is the --manifest-url-header flag: "Key:Value" pairs,
// separated by commas or given in repeated flags; repeated keys append
// values. The first use on the command line replaces the defaults (or the
// file's headers, see Complete). Split on the first ':', so values may hold
// ':' (an "Authorization: Bearer a:b" header works), not ','.
// It behaves as upstream's ColonSeparatedMultimapStringString.
type headerValue struct {
	m   *map[string][]string
	set bool
}

func newHeaderValue(m *map[string][]string) *headerValue { return &headerValue{m: m} }

// Set parses one flag value. pflag names the flag in the error it returns.
func (h *headerValue) Set(value string) error {
	parsed := map[string][]string{}
	for _, pair := range strings.Split(value, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		key, val, found := strings.Cut(pair, ":")
		key = strings.TrimSpace(key)
		if !found || key == "" {
			return fmt.Errorf("malformed pair %q, want Key:Value", pair)
		}
		parsed[key] = append(parsed[key], strings.TrimSpace(val))
	}
	if !h.set || *h.m == nil {
		*h.m = map[string][]string{}
		h.set = true
	}
	for k, vs := range parsed {
		(*h.m)[k] = append((*h.m)[k], vs...)
	}
	return nil
}

// String renders the headers as the flag takes them, keys sorted.
func (h *headerValue) String() string {
	if h.m == nil || *h.m == nil {
		return ""
	}
	keys := make([]string, 0, len(*h.m))
	for k := range *h.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pairs []string
	for _, k := range keys {
		for _, v := range (*h.m)[k] {
			pairs = append(pairs, k+":"+v)
		}
	}
	return strings.Join(pairs, ",")
}

// Type is the name pflag shows in help.
func (h *headerValue) Type() string { return "Key:Value" }
