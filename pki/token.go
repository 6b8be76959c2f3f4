package pki

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TokenFile is the admin bearer token's file name in the directory given
// to EnsureToken's caller (by convention the same directory as the certs).
const TokenFile = "admin.token"

// EnsureToken returns the bearer token stored at path, generating a random
// one (256 bits, base64url) and storing it 0600 when the file is missing or
// empty. The token is kept across restarts so that an admin kubeconfig
// written earlier keeps working.
func EnsureToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if tok := strings.TrimSpace(string(data)); tok != "" {
			return tok, nil
		}
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("pki: reading token %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("pki: creating directory for token %s: %w", path, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("pki: generating token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw)
	if err := writeAtomic(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	return tok, nil
}
