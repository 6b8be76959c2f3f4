package serviceaccount_test

import (
	"encoding/base64"
	"testing"
)

func decode(t *testing.T, segment string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(segment)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
