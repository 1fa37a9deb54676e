package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SecretKeyEnv names the variable that may hold the key sealing feed
// credentials: 32 bytes, base64 or hex. Several instances sharing one
// PostgreSQL database must share it.
const SecretKeyEnv = "TIFEEDS_SECRET_KEY"

// secretKeyFile is the name of the key file made when SecretKeyEnv is unset.
const secretKeyFile = "secret.key"

// sealVersion prefixes every sealed value, so the scheme can change later.
const sealVersion = 1

// ErrSecretKey is returned when a sealed value cannot be opened: the key
// changed or the value was tampered with.
var ErrSecretKey = errors.New("store: sealed secret does not open with this key")

// Secrets seals feed credentials at rest with AES-256-GCM.
type Secrets struct {
	aead cipher.AEAD
}

// NewSecrets returns Secrets sealing with a 32-byte key.
func NewSecrets(key []byte) (*Secrets, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("store: secret key must be 32 bytes, not %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("store: unable to use the secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("store: unable to use the secret key: %w", err)
	}
	return &Secrets{aead: aead}, nil
}

// LoadSecrets returns the Secrets of the database named by dsn: the key of
// SecretKeyEnv when set, else the key file beside the SQLite database (or in
// data/ for PostgreSQL), created with mode 0600 on first use.
func LoadSecrets(dsn string) (*Secrets, error) {
	if v := strings.TrimSpace(os.Getenv(SecretKeyEnv)); v != "" {
		key, err := decodeKey(v)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", SecretKeyEnv, err)
		}
		return NewSecrets(key)
	}
	dir := "data"
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok && path != ":memory:" {
		dir = filepath.Dir(path)
	}
	return LoadSecretsFile(filepath.Join(dir, secretKeyFile))
}

// LoadSecretsFile reads the key file at path, creating it with a new random
// key (mode 0600) when it does not exist.
func LoadSecretsFile(path string) (*Secrets, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("store: unable to create %s: %w", filepath.Dir(path), err)
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("store: unable to make a secret key: %w", err)
		}
		// O_EXCL: when two processes start at once, one key wins and both read it.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return nil, fmt.Errorf("store: unable to write %s: %w", path, werr)
			}
			return NewSecrets(key)
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("store: unable to create %s: %w", path, err)
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to read the secret key: %w", err)
	}
	key, err := decodeKey(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	return NewSecrets(key)
}

func decodeKey(s string) ([]byte, error) {
	if key, err := base64.StdEncoding.DecodeString(s); err == nil && len(key) == 32 {
		return key, nil
	}
	if key, err := hex.DecodeString(s); err == nil && len(key) == 32 {
		return key, nil
	}
	return nil, errors.New("want 32 bytes in base64 or hex")
}

// Seal encrypts plain; an empty plain seals to nil (no secret).
func (s *Secrets) Seal(plain string) ([]byte, error) {
	if plain == "" {
		return nil, nil
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("store: unable to make a nonce: %w", err)
	}
	out := append([]byte{sealVersion}, nonce...)
	return s.aead.Seal(out, nonce, []byte(plain), []byte{sealVersion}), nil
}

// Open decrypts what Seal returned; nil opens to "".
func (s *Secrets) Open(sealed []byte) (string, error) {
	if len(sealed) == 0 {
		return "", nil
	}
	n := s.aead.NonceSize()
	if len(sealed) < 1+n || sealed[0] != sealVersion {
		return "", ErrSecretKey
	}
	plain, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], sealed[:1])
	if err != nil {
		return "", ErrSecretKey
	}
	return string(plain), nil
}
