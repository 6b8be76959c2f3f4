package kite

import "k8s.io/apiserver/pkg/authorization/authorizer"

// policyAuthorizer is the authorizer admission policies' CEL
// `authorizer` variable asks; nil (allow everything) until the API server
// is built, as no request reaches a policy before.
func (s *Server) policyAuthorizer() authorizer.UnconditionalAuthorizer {
	if s.authz == nil {
		return nil
	}
	return s.authz
}
