package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	jose "gopkg.in/go-jose/go-jose.v2"
	"k8s.io/client-go/util/keyutil"
)

// PublicKey is one key that verifies tokens, with its key ID (upstream's:
// the base64url SHA-256 of its PKIX DER, so that the same key has the
// same ID in kube-apiserver and in Kite).
type PublicKey struct {
	KeyID string
	Key   crypto.PublicKey
}

// Keys are the signing key and the keys that verify tokens (the signing
// key's public half first).
type Keys struct {
	signer jose.Signer
	alg    jose.SignatureAlgorithm
	Public []PublicKey
}

// LoadKeys reads the signing key (--service-account-signing-key-file: a
// PEM RSA or ECDSA private key) and the verification keys
// (--service-account-key-file: PEM public or private keys, several per
// file allowed). The signing key always verifies too.
func LoadKeys(signingKeyFile string, keyFiles []string) (*Keys, error) {
	priv, err := keyutil.PrivateKeyFromFile(signingKeyFile)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: signing key %s: %w", signingKeyFile, err)
	}
	k, err := NewKeys(priv)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: signing key %s: %w", signingKeyFile, err)
	}
	for _, f := range keyFiles {
		pubs, err := keyutil.PublicKeysFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("serviceaccount: key file %s: %w", f, err)
		}
		for _, pub := range pubs {
			if err := k.addPublic(pub); err != nil {
				return nil, fmt.Errorf("serviceaccount: key file %s: %w", f, err)
			}
		}
	}
	return k, nil
}

// NewKeys makes Keys that sign with priv (*rsa.PrivateKey or
// *ecdsa.PrivateKey, as upstream accepts) and verify with its public key.
func NewKeys(priv crypto.PrivateKey) (*Keys, error) {
	var (
		alg jose.SignatureAlgorithm
		pub crypto.PublicKey
	)
	switch pk := priv.(type) {
	case *rsa.PrivateKey:
		alg, pub = jose.RS256, &pk.PublicKey
	case *ecdsa.PrivateKey:
		switch pk.Curve {
		case elliptic.P256():
			alg = jose.ES256
		case elliptic.P384():
			alg = jose.ES384
		case elliptic.P521():
			alg = jose.ES512
		default:
			return nil, fmt.Errorf("unknown private key curve, must be 256, 384, or 521")
		}
		pub = &pk.PublicKey
	default:
		return nil, fmt.Errorf("unknown private key type %T, must be *rsa.PrivateKey or *ecdsa.PrivateKey", priv)
	}
	kid, err := keyID(pub)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{
		Algorithm: alg,
		Key:       &jose.JSONWebKey{Algorithm: string(alg), Key: priv, KeyID: kid, Use: "sig"},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("signer: %w", err)
	}
	return &Keys{signer: signer, alg: alg, Public: []PublicKey{{KeyID: kid, Key: pub}}}, nil
}

func (k *Keys) addPublic(pub crypto.PublicKey) error {
	kid, err := keyID(pub)
	if err != nil {
		return err
	}
	for _, have := range k.Public {
		if have.KeyID == kid {
			return nil
		}
	}
	k.Public = append(k.Public, PublicKey{KeyID: kid, Key: pub})
	return nil
}

// keyID is upstream's key ID: the unpadded base64url SHA-256 of the key's
// PKIX DER.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("serializing public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
