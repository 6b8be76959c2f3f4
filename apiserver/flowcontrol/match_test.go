package flowcontrol

import (
	"net/http"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

func resourceReq(verb, group, resource, sub, ns string) *request.RequestInfo {
	return &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns}
}

func nonResourceReq(verb, path string) *request.RequestInfo {
	return &request.RequestInfo{Verb: verb, Path: path}
}

func TestMatchesSubject(t *testing.T) {
	sa := func(ns, name string) flowcontrolv1.Subject {
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: name}}
	}
	usr := func(name string) flowcontrolv1.Subject {
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: name}}
	}
	grp := func(name string) flowcontrolv1.Subject {
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: name}}
	}
	for _, tt := range []struct {
		name    string
		user    user.Info
		subject flowcontrolv1.Subject
		want    bool
	}{
		{"user by name", &user.DefaultInfo{Name: "alice"}, usr("alice"), true},
		{"another user", &user.DefaultInfo{Name: "bob"}, usr("alice"), false},
		{"every user", &user.DefaultInfo{Name: "bob"}, usr("*"), true},
		{"group member", &user.DefaultInfo{Name: "a", Groups: []string{"x", "system:masters"}}, grp("system:masters"), true},
		{"not a member", &user.DefaultInfo{Name: "a", Groups: []string{"x"}}, grp("system:masters"), false},
		{"every group", &user.DefaultInfo{Name: "a"}, grp("*"), true},
		{"service account", &user.DefaultInfo{Name: "system:serviceaccount:kube-system:default"}, sa("kube-system", "default"), true},
		{"service account of another name", &user.DefaultInfo{Name: "system:serviceaccount:kube-system:other"}, sa("kube-system", "default"), false},
		{"every service account of a namespace", &user.DefaultInfo{Name: "system:serviceaccount:kube-system:other"}, sa("kube-system", "*"), true},
		{"namespace prefix is not the namespace", &user.DefaultInfo{Name: "system:serviceaccount:kube-system-2:x"}, sa("kube-system", "*"), false},
		{"a user named like a namespace", &user.DefaultInfo{Name: "kube-system:default"}, sa("kube-system", "default"), false},
		{"no subject body", &user.DefaultInfo{Name: "a"}, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := matchesSubject(tt.user, tt.subject); got != tt.want {
				t.Errorf("matchesSubject = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatchesRules(t *testing.T) {
	all := []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "*"}}}
	rr := func(r flowcontrolv1.ResourcePolicyRule) *flowcontrolv1.PolicyRulesWithSubjects {
		return &flowcontrolv1.PolicyRulesWithSubjects{Subjects: all, ResourceRules: []flowcontrolv1.ResourcePolicyRule{r}}
	}
	nr := func(verbs []string, urls ...string) *flowcontrolv1.PolicyRulesWithSubjects {
		return &flowcontrolv1.PolicyRulesWithSubjects{Subjects: all, NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: verbs, NonResourceURLs: urls}}}
	}
	pods := flowcontrolv1.ResourcePolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}, Namespaces: []string{"*"}}
	leases := flowcontrolv1.ResourcePolicyRule{Verbs: []string{"*"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{"kube-node-lease"}}
	status := flowcontrolv1.ResourcePolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"nodes/status"}, ClusterScope: true}
	every := flowcontrolv1.ResourcePolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"}}
	for _, tt := range []struct {
		name string
		rule *flowcontrolv1.PolicyRulesWithSubjects
		req  *request.RequestInfo
		want bool
	}{
		{"verb and resource in any namespace", rr(pods), resourceReq("list", "", "pods", "", "ns1"), true},
		{"another verb", rr(pods), resourceReq("delete", "", "pods", "", "ns1"), false},
		{"cluster-scoped request of a namespaced rule", rr(pods), resourceReq("list", "", "pods", "", ""), false},
		{"another group", rr(pods), resourceReq("list", "apps", "pods", "", "ns1"), false},
		{"subresource is not the resource", rr(pods), resourceReq("get", "", "pods", "log", "ns1"), false},
		{"namespace listed", rr(leases), resourceReq("update", "coordination.k8s.io", "leases", "", "kube-node-lease"), true},
		{"namespace not listed", rr(leases), resourceReq("update", "coordination.k8s.io", "leases", "", "default"), false},
		{"resource/subresource", rr(status), resourceReq("patch", "", "nodes", "status", ""), true},
		{"resource without its subresource", rr(status), resourceReq("patch", "", "nodes", "", ""), false},
		{"a longer subresource", rr(status), resourceReq("patch", "", "nodes", "statusx", ""), false},
		{"everything, cluster scope", rr(every), resourceReq("create", "apps", "deployments", "scale", ""), true},
		{"resource rule against a path", rr(every), nonResourceReq("get", "/healthz"), false},
		{"exact path", nr([]string{"get"}, "/healthz"), nonResourceReq("get", "/healthz"), true},
		{"path under a prefix", nr([]string{"get"}, "/healthz/*"), nonResourceReq("get", "/healthz/etcd"), true},
		{"the prefix itself is not under it", nr([]string{"get"}, "/healthz/*"), nonResourceReq("get", "/healthzz"), false},
		{"every path", nr([]string{"*"}, "*"), nonResourceReq("post", "/anything"), true},
		{"path rule against a resource", nr([]string{"*"}, "*"), resourceReq("get", "", "pods", "", "ns"), false},
		{"path of another verb", nr([]string{"get"}, "/livez"), nonResourceReq("post", "/livez"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Digest{RequestInfo: tt.req, User: &user.DefaultInfo{Name: "u"}}
			if got := matchesPolicyRule(d, tt.rule); got != tt.want {
				t.Errorf("matchesPolicyRule = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestClassifyBootstrap checks which of upstream's bootstrap FlowSchemas
// and levels requests of the usual clients land in.
func TestClassifyBootstrap(t *testing.T) {
	cfg, err := digest(append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...),
		append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...), 600)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name        string
		user        user.Info
		req         *request.RequestInfo
		schema, lvl string
	}{
		{"system:masters", &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}, resourceReq("delete", "", "pods", "", "x"), "exempt", "exempt"},
		{"health check of anybody", &user.DefaultInfo{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, nonResourceReq("get", "/readyz"), "probes", "exempt"},
		{"node heartbeat", &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}, resourceReq("update", "coordination.k8s.io", "leases", "", "kube-node-lease"), "system-node-high", "node-high"},
		{"node reads", &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}, resourceReq("list", "", "pods", "", ""), "system-nodes", "system"},
		{"leader election", &user.DefaultInfo{Name: "system:kube-scheduler", Groups: []string{"system:authenticated"}}, resourceReq("update", "coordination.k8s.io", "leases", "", "kube-system"), "system-leader-election", "leader-election"},
		{"kube-system service account", &user.DefaultInfo{Name: "system:serviceaccount:kube-system:replicaset-controller", Groups: []string{"system:serviceaccounts", "system:authenticated"}}, resourceReq("create", "", "pods", "", "d"), "kube-system-service-accounts", "workload-high"},
		{"other service account", &user.DefaultInfo{Name: "system:serviceaccount:app:default", Groups: []string{"system:serviceaccounts", "system:authenticated"}}, resourceReq("list", "", "pods", "", "app"), "service-accounts", "workload-low"},
		{"a user", &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}, resourceReq("list", "", "pods", "", "app"), "global-default", "global-default"},
		{"anonymous", &user.DefaultInfo{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, resourceReq("list", "", "pods", "", "app"), "global-default", "global-default"},
		{"a user of no group", &user.DefaultInfo{Name: "nobody"}, resourceReq("list", "", "pods", "", "app"), "catch-all", "catch-all"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs, lc := cfg.classify(Digest{RequestInfo: tt.req, User: tt.user})
			if fs.Name != tt.schema || lc.pl.Name != tt.lvl {
				t.Errorf("classified by %s into %s, want %s into %s", fs.Name, lc.pl.Name, tt.schema, tt.lvl)
			}
		})
	}
}

func TestFlowDistinguisher(t *testing.T) {
	d := Digest{RequestInfo: resourceReq("get", "", "pods", "", "ns1"), User: &user.DefaultInfo{Name: "alice"}}
	for _, tt := range []struct {
		method *flowcontrolv1.FlowDistinguisherMethod
		want   string
	}{
		{nil, ""},
		{&flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType}, "alice"},
		{&flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType}, "ns1"},
	} {
		fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: flowcontrolv1.FlowSchemaSpec{DistinguisherMethod: tt.method}}
		if got := flowDistinguisher(fs, d); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.method, got, tt.want)
		}
	}
}

func TestHeaderNamesAreCanonical(t *testing.T) {
	for upstream, ours := range map[string]string{
		flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID: priorityLevelHeader,
		flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID:                 flowSchemaHeader,
	} {
		if http.CanonicalHeaderKey(upstream) != ours {
			t.Errorf("%s: canonical %s, have %s", upstream, http.CanonicalHeaderKey(upstream), ours)
		}
	}
}
