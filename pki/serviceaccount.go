package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/keyutil"
)

// ServiceAccountKeyFile is the ServiceAccount token signing key's file
// name, kubeadm's.
const ServiceAccountKeyFile = "sa.key"

// EnsureServiceAccountKey makes sure path holds a private key that
// signs ServiceAccount tokens, generating one (ECDSA P-256, ES256 tokens)
// and storing it 0600 when the file is missing. The key is kept across
// restarts so that the tokens issued earlier keep verifying; a file that
// is there but unreadable as a key is an error, never overwritten.
func EnsureServiceAccountKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		if _, err := keyutil.PrivateKeyFromFile(path); err != nil {
			return fmt.Errorf("pki: service account key %s: %w", path, err)
		}
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pki: service account key %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("pki: creating directory for %s: %w", path, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("pki: generating service account key: %w", err)
	}
	pem, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("pki: encoding service account key: %w", err)
	}
	return writeAtomic(path, pem, 0o600)
}
