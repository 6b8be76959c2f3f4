// Package serviceaccount signs and verifies ServiceAccount tokens as
// kube-apiserver does (k8s.io/kubernetes/pkg/serviceaccount): JWTs signed
// with go-jose (the library upstream uses), upstream's claims
// ("kubernetes.io": namespace, serviceaccount{name,uid}, pod{name,uid} or
// secret{name,uid}, node{name,uid}; iss, sub, aud, exp, iat, nbf, jti), and
// the validation that makes a token die with its objects: the
// ServiceAccount must still exist with the UID in the token, and so must
// the pod, secret or node it is bound to (read through a Getter, which Kite
// answers from its watch caches).
//
// It also answers TokenRequest (serviceaccounts/token: the bound object
// looked up, the claims signed) and serves the OIDC discovery documents
// (/.well-known/openid-configuration, /openid/v1/jwks) that let other
// parties verify the tokens.
//
// How Kite wires it:
//
//	keys, err := serviceaccount.LoadKeys(signingKeyFile, keyFiles)
//	tokens, err := serviceaccount.New(serviceaccount.Options{Issuer: issuer, Keys: keys, Getter: getter})
//	authn.Options{TokenAuthenticators: []authenticator.Token{tokens}} // verification
//	builtin.WithAuthentication(builtin.Authentication{Issuer: tokens, ...}) // TokenRequest
package serviceaccount
