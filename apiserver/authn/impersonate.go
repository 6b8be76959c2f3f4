package authn

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

// impersonationRequest is one thing a request asks to act as, and the
// attributes the authorizer is asked about it (upstream's
// filters/impersonation: verb impersonate on users, groups,
// serviceaccounts, uids or userextras/<key>).
type impersonationRequest struct {
	attrs authorizer.AttributesRecord
	apply func(u *user.DefaultInfo, groupsSpecified bool)
}

// impersonationRequests reads the Impersonate-* headers in upstream's
// order (user, groups, extras, uid). Groups, extras or a uid without a
// user is a bad request.
func impersonationRequests(h http.Header) ([]impersonationRequest, error) {
	var out []impersonationRequest
	var kinds []string
	if name := h.Get(authenticationv1.ImpersonateUserHeader); name != "" {
		if ns, sa, err := serviceaccount.SplitUsername(name); err == nil {
			out = append(out, impersonationRequest{
				attrs: authorizer.AttributesRecord{Resource: "serviceaccounts", APIVersion: "v1", Namespace: ns, Name: sa},
				apply: func(u *user.DefaultInfo, groupsSpecified bool) {
					u.Name = serviceaccount.MakeUsername(ns, sa)
					if !groupsSpecified {
						u.Groups = serviceaccount.MakeGroupNames(ns)
					}
				},
			})
		} else {
			out = append(out, impersonationRequest{
				attrs: authorizer.AttributesRecord{Resource: "users", APIVersion: "v1", Name: name},
				apply: func(u *user.DefaultInfo, _ bool) { u.Name = name },
			})
		}
		kinds = append(kinds, "user "+name)
	}
	hasUser := len(out) > 0
	for _, g := range h[authenticationv1.ImpersonateGroupHeader] {
		out = append(out, impersonationRequest{
			attrs: authorizer.AttributesRecord{Resource: "groups", APIVersion: "v1", Name: g},
			apply: func(u *user.DefaultInfo, _ bool) { u.Groups = append(u.Groups, g) },
		})
		kinds = append(kinds, "group "+g)
	}
	for header, values := range h {
		if !strings.HasPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			continue
		}
		key := strings.ToLower(header[len(authenticationv1.ImpersonateUserExtraHeaderPrefix):])
		if unescaped, err := url.PathUnescape(key); err == nil {
			key = unescaped
		}
		for _, v := range values {
			out = append(out, impersonationRequest{
				attrs: authorizer.AttributesRecord{Resource: "userextras", Subresource: key, APIGroup: authenticationv1.GroupName, APIVersion: "v1", Name: v},
				apply: func(u *user.DefaultInfo, _ bool) {
					if u.Extra == nil {
						u.Extra = map[string][]string{}
					}
					u.Extra[key] = append(u.Extra[key], v)
				},
			})
			kinds = append(kinds, "extra "+key+"="+v)
		}
	}
	if uid := h.Get(authenticationv1.ImpersonateUIDHeader); uid != "" {
		out = append(out, impersonationRequest{
			attrs: authorizer.AttributesRecord{Resource: "uids", APIGroup: authenticationv1.GroupName, APIVersion: "v1", Name: uid},
			apply: func(u *user.DefaultInfo, _ bool) { u.UID = uid },
		})
		kinds = append(kinds, "uid "+uid)
	}
	if len(out) > 0 && !hasUser {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("requested %v without impersonating a user", kinds))
	}
	return out, nil
}

// impersonation is upstream's impersonation filter: each thing asked for
// must be allowed the impersonate verb for the requesting user (by the
// Authorizer; all allowed when there is none), then the request goes on
// as the impersonated user, with system:authenticated (or, for
// system:anonymous, system:unauthenticated) added as upstream adds them.
func (a *Authenticator) impersonation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs, err := impersonationRequests(r.Header)
		if err != nil {
			writeStatus(w, err.(*apierrors.StatusError), "")
			return
		}
		if len(reqs) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		requestor, ok := genericapirequest.UserFrom(ctx)
		if !ok {
			writeStatus(w, apierrors.NewInternalError(fmt.Errorf("no user found for request")), "")
			return
		}
		groupsSpecified := len(r.Header[authenticationv1.ImpersonateGroupHeader]) > 0
		imp := &user.DefaultInfo{Groups: []string{}}
		for _, ir := range reqs {
			attrs := ir.attrs
			attrs.User, attrs.Verb, attrs.ResourceRequest = requestor, "impersonate", true
			if a.authz != nil {
				decision, reason, err := a.authz.Authorize(ctx, attrs)
				if err != nil || decision != authorizer.DecisionAllow {
					klog.FromContext(ctx).V(4).Info("Forbidden", "URI", r.RequestURI, "reason", reason, "err", err)
					writeStatus(w, forbidden(attrs, reason), "")
					return
				}
			}
			ir.apply(imp, groupsSpecified)
		}
		if imp.Name != user.Anonymous {
			if !containsAny(imp.Groups, user.AllAuthenticated, user.AllUnauthenticated) {
				imp.Groups = append(imp.Groups, user.AllAuthenticated)
			}
		} else if !containsAny(imp.Groups, user.AllUnauthenticated) {
			imp.Groups = append(imp.Groups, user.AllUnauthenticated)
		}
		r = r.WithContext(genericapirequest.WithUser(ctx, imp))
		r.Header.Del(authenticationv1.ImpersonateUserHeader)
		r.Header.Del(authenticationv1.ImpersonateGroupHeader)
		r.Header.Del(authenticationv1.ImpersonateUIDHeader)
		for h := range r.Header {
			if strings.HasPrefix(h, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
				r.Header.Del(h)
			}
		}
		next.ServeHTTP(w, r)
	})
}

func containsAny(list []string, want ...string) bool {
	for _, l := range list {
		for _, w := range want {
			if l == w {
				return true
			}
		}
	}
	return false
}

// forbidden is upstream's 403 (responsewriters.Forbidden): the message
// names the user, the verb and the resource, then the authorizer's reason.
func forbidden(attrs authorizer.AttributesRecord, reason string) *apierrors.StatusError {
	resource := attrs.Resource
	if attrs.Subresource != "" {
		resource += "/" + attrs.Subresource
	}
	username := ""
	if attrs.User != nil {
		username = attrs.User.GetName()
	}
	var msg string
	if attrs.Namespace != "" {
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", username, attrs.Verb, resource, attrs.APIGroup, attrs.Namespace)
	} else {
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", username, attrs.Verb, resource, attrs.APIGroup)
	}
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: attrs.APIGroup, Resource: attrs.Resource}, attrs.Name, fmt.Errorf("%s", msg))
}
