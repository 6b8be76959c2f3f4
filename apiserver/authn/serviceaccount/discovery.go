package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	jose "gopkg.in/go-jose/go-jose.v2"
)

// The OIDC discovery paths, as kube-apiserver serves them.
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
)

// IsDiscoveryPath reports whether path is one of the two OIDC discovery
// documents.
func IsDiscoveryPath(path string) bool { return path == OpenIDConfigPath || path == JWKSPath }

// openIDMetadata is upstream's discovery document.
type openIDMetadata struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// Discovery serves OpenIDConfigPath and JWKSPath for the tokens' issuer
// and keys. externalAddress gives the API server's host:port, from which
// the jwks_uri is made as upstream makes it when --service-account-jwks-uri
// is not set (https://<address>/openid/v1/jwks); it is asked on each
// request because the port is known only once the server listens.
func (t *Tokens) Discovery(externalAddress func() string) (http.Handler, error) {
	iss, err := url.Parse(t.opts.Issuer)
	switch {
	case err != nil:
		return nil, fmt.Errorf("serviceaccount: issuer %q: %w", t.opts.Issuer, err)
	case iss.Scheme != "https":
		// Upstream serves discovery only for an https issuer; a token's
		// verifier would fetch the keys from there.
		return nil, fmt.Errorf("serviceaccount: issuer URL must use https scheme, got: %s", t.opts.Issuer)
	}
	var keys []jose.JSONWebKey
	var algs []string
	for _, k := range t.opts.Keys.Public {
		alg, err := algorithm(k.Key)
		if err != nil {
			return nil, fmt.Errorf("serviceaccount: key %s: %w", k.KeyID, err)
		}
		keys = append(keys, jose.JSONWebKey{Algorithm: alg, Key: k.Key, KeyID: k.KeyID, Use: "sig"})
		if !slices.Contains(algs, alg) {
			algs = append(algs, alg)
		}
	}
	slices.Sort(algs)
	keyset, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: encoding the key set: %w", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		switch r.URL.Path {
		case OpenIDConfigPath:
			body, _ := json.Marshal(openIDMetadata{
				Issuer:        t.opts.Issuer,
				JWKSURI:       (&url.URL{Scheme: "https", Host: externalAddress(), Path: JWKSPath}).String(),
				ResponseTypes: []string{"id_token"},
				SubjectTypes:  []string{"public"},
				SigningAlgs:   algs,
			})
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		case JWKSPath:
			w.Header().Set("Content-Type", "application/jwk-set+json")
			w.Write(keyset)
		default:
			http.NotFound(w, r)
		}
	}), nil
}

// algorithm is the JWS algorithm a key verifies, as upstream lists it.
func algorithm(pub any) (string, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return string(jose.RS256), nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return string(jose.ES256), nil
		case elliptic.P384():
			return string(jose.ES384), nil
		case elliptic.P521():
			return string(jose.ES512), nil
		}
		return "", fmt.Errorf("unknown curve %v", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("unknown public key type %T", pub)
}
