package store

import (
	"sync"
	"time"
)

// DefaultTenantCacheTTL is how long an answer of Tenant is kept without
// asking the database again. Writes through this Store drop it at once;
// writes of another instance drop it when their event arrives (see
// OnTenantWrite and ForgetTenants). The TTL bounds what a lost event, or a
// change made outside the server (the CLI, SQL), leaves stale.
const DefaultTenantCacheTTL = 5 * time.Second

// maxCachedTenants bounds the cache; past it the cache starts over.
const maxCachedTenants = 10_000

// tenantCache holds recent answers of Store.Tenant: an authenticated GET
// of a tenant then costs no query. A tenant's answer depends on the
// tenants row, its group's name and its users' count: any write to
// tenants, tenant groups or a tenant's users drops the whole cache, since
// such writes are rare next to reads.
type tenantCache struct {
	mu sync.Mutex
	// ttl is 0 until the first use sets the default; < 0 disables.
	ttl time.Duration
	// gen moves on every drop: a read that began before one does not
	// cache its (maybe stale) answer.
	gen     uint64
	entries map[string]cachedTenant
	// onWrite is told of every tenant write through this Store, to tell
	// the other instances.
	onWrite func()
}

type cachedTenant struct {
	tenant  Tenant
	expires time.Time
}

// get returns a copy of the cached tenant of id, and the generation to
// pass to put.
func (c *tenantCache) get(id string, now time.Time) (*Tenant, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		return nil, false, c.gen
	}
	if now.After(e.expires) {
		delete(c.entries, id)
		return nil, false, c.gen
	}
	t := e.tenant
	return &t, true, c.gen
}

// put caches t, read since gen, unless a write came meanwhile.
func (c *tenantCache) put(t *Tenant, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl == 0 {
		c.ttl = DefaultTenantCacheTTL
	}
	if c.ttl < 0 || c.gen != gen {
		return
	}
	if c.entries == nil || len(c.entries) >= maxCachedTenants {
		c.entries = map[string]cachedTenant{}
	}
	c.entries[t.ID] = cachedTenant{tenant: *t, expires: now.Add(c.ttl)}
}

// forget drops every cached tenant, and the answers of reads under way.
func (c *tenantCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// SetTenantCacheTTL sets how long Tenant answers are cached; 0 or less
// turns the cache off. Set it before the first request.
func (s *Store) SetTenantCacheTTL(d time.Duration) {
	s.tenantCache.mu.Lock()
	defer s.tenantCache.mu.Unlock()
	if d <= 0 {
		d = -1
	}
	s.tenantCache.ttl = d
}

// OnTenantWrite calls fn after every write through this Store that may
// change a tenant's answer (a tenant, a tenant group or a tenant's user
// created, changed or deleted), so that the other instances sharing the
// database drop theirs (ForgetTenants). fn must not block.
func (s *Store) OnTenantWrite(fn func()) {
	s.tenantCache.mu.Lock()
	defer s.tenantCache.mu.Unlock()
	s.tenantCache.onWrite = fn
}

// ForgetTenants drops the cached tenants: another instance changed one.
func (s *Store) ForgetTenants() { s.tenantCache.forget() }

// tenantsWritten drops the cached tenants and tells the other instances.
// Writers defer it, so it runs after the commit, whatever the outcome: an
// error may follow a commit that took place.
func (s *Store) tenantsWritten() {
	s.tenantCache.forget()
	s.tenantCache.mu.Lock()
	fn := s.tenantCache.onWrite
	s.tenantCache.mu.Unlock()
	if fn != nil {
		fn()
	}
}
