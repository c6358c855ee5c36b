package auth

import (
	"bytes"
	"fmt"
	"os"
)

// LoadHMAC reads an HMAC secret file (at least 32 bytes; surrounding
// whitespace is ignored).
func LoadHMAC(path string) (*HMAC, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hmac secret: %w", err)
	}
	secret := bytes.TrimSpace(b)
	if len(secret) < 32 {
		return nil, fmt.Errorf("hmac secret %s: %d bytes, need at least 32", path, len(secret))
	}
	return &HMAC{Secret: secret}, nil
}
