package server

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/ingest"
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
type credentialCache struct {
	ttl time.Duration
	mu  sync.Mutex
	// epoch moves on every revocation: a check that began before one
	// does not cache its (maybe stale) answer.
	epoch   uint64
	entries map[[32]byte]cachedCredential
}

type cachedCredential struct {
	user    *store.User
	cred    store.Credential
	expires time.Time
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

// get returns the cached credential of k, and the epoch to pass to put.
func (c *credentialCache) get(k [32]byte, now time.Time) (cachedCredential, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if ok && now.After(e.expires) {
		delete(c.entries, k)
		ok = false
	}
	return e, ok, c.epoch
}

// put caches a credential verified since epoch, unless a revocation came
// meanwhile.
func (c *credentialCache) put(k [32]byte, epoch uint64, u *store.User, cred store.Credential, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	if c.entries == nil || len(c.entries) >= maxCachedCredentials {
		c.entries = map[[32]byte]cachedCredential{}
	}
	c.entries[k] = cachedCredential{user: u, cred: cred, expires: now.Add(c.ttl)}
}

// revoke drops the credentials of the user or tenant r names. It does not
// block: it runs inside the bus's Publish.
func (c *credentialCache) revoke(r ingest.Revocation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for k, e := range c.entries {
		if r.UserID != 0 && e.cred.UserID == r.UserID || r.TenantID != "" && e.cred.TenantID == r.TenantID {
			delete(c.entries, k)
		}
	}
}

// drop forgets one credential, and anything being verified meanwhile.
func (c *credentialCache) drop(k [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	delete(c.entries, k)
}
