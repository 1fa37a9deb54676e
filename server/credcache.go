package server

import (
	"crypto/sha256"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/internal/ttlcache"
	"github.com/tifeeds/tifeeds/store"
)

// DefaultCredentialTTL is how long a verified credential is trusted without
// asking the store again. Revocations (key revoked, logout, tenant deleted)
// drop it at once on every instance through the events bus; the TTL bounds
// what a lost NOTIFY or a change made outside the server (the CLI) leaves.
const DefaultCredentialTTL = 5 * time.Second

// maxCachedCredentials bounds the cache; past it the cache starts over.
const maxCachedCredentials = 10_000

// credentialCache holds recently verified credentials by a hash of what
// the client sent: an authenticated read then costs no query.
type credentialCache = ttlcache.Cache[[32]byte, cachedCredential]

func newCredentialCache(ttl time.Duration) *credentialCache {
	return ttlcache.New[[32]byte, cachedCredential](ttl, maxCachedCredentials)
}

type cachedCredential struct {
	user *store.User
	cred store.Credential
}

// credentialKey hashes what the client sent; the secret itself is kept
// nowhere.
func credentialKeyOf(kind, name, secret string) [32]byte {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(secret))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// revokeCached drops the cached credentials of the user or tenant r names.
// It does not block: it runs inside the bus's Publish.
func revokeCached(c *credentialCache, r events.Revocation) {
	c.DeleteFunc(func(e cachedCredential) bool {
		return r.UserID != 0 && e.cred.UserID == r.UserID || r.TenantID != "" && e.cred.TenantID == r.TenantID
	})
}
