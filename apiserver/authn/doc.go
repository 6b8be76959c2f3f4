// Package authn says who a request is, as kube-apiserver's authentication
// does, as an http middleware in front of the API server's handlers.
//
// Authenticators run in upstream's order and the first that knows the
// credential wins (k8s.io/apiserver's request union):
//
//   - X.509 client certificates that chain to the cluster CA, for client
//     authentication (upstream's x509 request authenticator: user = the
//     subject's common name, groups = its organizations). The TLS server
//     asks for certificates without requiring them (tls.RequestClientCert,
//     as kube-apiserver's --client-ca-file): a certificate of another CA
//     is an authentication error, so its request gets 401, not a failed
//     handshake.
//   - Bearer tokens ("Authorization: Bearer", upstream's parser; the header
//     is removed once it authenticated): the static tokens (the admin's,
//     compared in constant time over every entry), ServiceAccount JWTs
//     (package serviceaccount) and bootstrap tokens (BootstrapTokens). A
//     token none of them knows is an error, never anonymous.
//
// Every authenticated user but system:anonymous gets system:authenticated
// (upstream's AuthenticatedGroupAdder). Requests carry the API's audiences
// (the service account issuer) in their context; a response for none of
// them is refused, as upstream's filter does.
//
// A request without credentials goes on as system:anonymous (group
// system:unauthenticated) where Options say: with an Authorizer and
// Anonymous (--anonymous-auth) on every path, for the authorizer to judge;
// with an Authorizer and Anonymous off nowhere; without an Authorizer only
// on /healthz, /livez, /readyz (and subpaths) and the issuer discovery
// documents, since nothing would stop it elsewhere. Everything else gets
// upstream's 401, a metav1.Status with reason Unauthorized; an
// unauthenticated HTTP/2 connection is also told to close.
//
// Impersonation (Impersonate-User, -Group, -Uid, -Extra-*; kubectl --as,
// --as-group, --as-uid) follows upstream's filter: each thing impersonated
// needs the impersonate verb on users, groups, serviceaccounts, uids or
// userextras/<key> from the Authorizer (all allowed without one), else
// 403 with upstream's message; the request then goes on as that user.
//
// ReviewToken answers TokenReviews with the same token authenticators.
//
// How Kite wires it (kite's authn.go):
//
//	a, err := authn.New(authn.Options{Tokens: []authn.Token{authn.Admin(token)}, ClientCA: pool,
//		ServiceAccounts: tokens, BootstrapTokens: authn.NewBootstrapTokens(get, nil),
//		APIAudiences: tokens.Audiences(), Anonymous: true, Authorizer: authz})
//	handler = a.Wrap(handler)
package authn
