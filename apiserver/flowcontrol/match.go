package flowcontrol

import (
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Digest is what classification looks at: who asks, and what.
type Digest struct {
	RequestInfo *request.RequestInfo
	User        user.Info
}

// matchesFlowSchema reports whether one of fs's rules matches d
// (upstream's rule.go).
func matchesFlowSchema(d Digest, fs *flowcontrolv1.FlowSchema) bool {
	for i := range fs.Spec.Rules {
		if matchesPolicyRule(d, &fs.Spec.Rules[i]) {
			return true
		}
	}
	return false
}

func matchesPolicyRule(d Digest, rule *flowcontrolv1.PolicyRulesWithSubjects) bool {
	if !matchesASubject(d.User, rule.Subjects) {
		return false
	}
	if d.RequestInfo.IsResourceRequest {
		for i := range rule.ResourceRules {
			if matchesResourceRule(d.RequestInfo, &rule.ResourceRules[i]) {
				return true
			}
		}
		return false
	}
	for i := range rule.NonResourceRules {
		if matchesNonResourceRule(d.RequestInfo, &rule.NonResourceRules[i]) {
			return true
		}
	}
	return false
}

func matchesASubject(u user.Info, subjects []flowcontrolv1.Subject) bool {
	for _, s := range subjects {
		if matchesSubject(u, s) {
			return true
		}
	}
	return false
}

const serviceAccountPrefix = "system:serviceaccount:"

func matchesSubject(u user.Info, s flowcontrolv1.Subject) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == u.GetName())
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			return false
		}
		if s.Group.Name == flowcontrolv1.NameAll {
			return true
		}
		for _, g := range u.GetGroups() {
			if g == s.Group.Name {
				return true
			}
		}
		return false
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return false
		}
		// system:serviceaccount:<namespace>:<name>, compared without
		// building the string: this runs for every request.
		rest, ok := strings.CutPrefix(u.GetName(), serviceAccountPrefix)
		if !ok {
			return false
		}
		rest, ok = strings.CutPrefix(rest, s.ServiceAccount.Namespace)
		if !ok {
			return false
		}
		rest, ok = strings.CutPrefix(rest, ":")
		if !ok {
			return false
		}
		return s.ServiceAccount.Name == flowcontrolv1.NameAll || rest == s.ServiceAccount.Name
	}
	return false
}

func matchesResourceRule(ri *request.RequestInfo, rule *flowcontrolv1.ResourcePolicyRule) bool {
	if !contains(ri.Verb, rule.Verbs, flowcontrolv1.VerbAll) ||
		!matchesResource(ri.Resource, ri.Subresource, rule.Resources) ||
		!contains(ri.APIGroup, rule.APIGroups, flowcontrolv1.APIGroupAll) {
		return false
	}
	if ri.Namespace == "" {
		return rule.ClusterScope
	}
	return contains(ri.Namespace, rule.Namespaces, flowcontrolv1.NamespaceEvery)
}

// matchesResource compares "resource/subresource" with the rule's
// resources without joining them.
func matchesResource(resource, subresource string, resources []string) bool {
	if len(resources) == 1 && resources[0] == flowcontrolv1.ResourceAll {
		return true
	}
	for _, r := range resources {
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		if len(r) == len(resource)+1+len(subresource) && strings.HasPrefix(r, resource) && r[len(resource)] == '/' && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

func matchesNonResourceRule(ri *request.RequestInfo, rule *flowcontrolv1.NonResourcePolicyRule) bool {
	if !contains(ri.Verb, rule.Verbs, flowcontrolv1.VerbAll) {
		return false
	}
	for _, p := range rule.NonResourceURLs {
		if p == flowcontrolv1.NonResourceAll || p == ri.Path {
			return true
		}
		// "/healthz/*" (validation allows a trailing "*" only) matches
		// what is under "/healthz/"; so does a plain "/healthz/" prefix.
		prefix := strings.TrimSuffix(p, "*")
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if strings.HasPrefix(ri.Path, prefix) {
			return true
		}
	}
	return false
}

// contains reports x in list, or list being just the wildcard (which
// validation allows only alone).
func contains(x string, list []string, wildcard string) bool {
	if len(list) == 1 && list[0] == wildcard {
		return true
	}
	for _, y := range list {
		if x == y {
			return true
		}
	}
	return false
}

// flowDistinguisher is the part of a flow's identity the FlowSchema's
// distinguisher method takes from the request: the user's name, the
// namespace, or nothing (one flow for the whole schema).
func flowDistinguisher(fs *flowcontrolv1.FlowSchema, d Digest) string {
	if fs.Spec.DistinguisherMethod == nil {
		return ""
	}
	switch fs.Spec.DistinguisherMethod.Type {
	case flowcontrolv1.FlowDistinguisherMethodByUserType:
		return d.User.GetName()
	case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
		return d.RequestInfo.Namespace
	}
	return ""
}
