package store

import (
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/internal/ttlcache"
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
	answers *ttlcache.Cache[string, Tenant]

	mu sync.Mutex
	// onWrite is told of every tenant write through this Store, to tell
	// the other instances.
	onWrite func()
}

func newTenantCache() tenantCache {
	return tenantCache{answers: ttlcache.New[string, Tenant](DefaultTenantCacheTTL, maxCachedTenants)}
}

// SetTenantCacheTTL sets how long Tenant answers are cached; 0 or less
// turns the cache off. Set it before the first request.
func (s *Store) SetTenantCacheTTL(d time.Duration) { s.tenantCache.answers.SetTTL(d) }

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
func (s *Store) ForgetTenants() { s.tenantCache.answers.Clear() }

// tenantsWritten drops the cached tenants and tells the other instances.
// Writers defer it, so it runs after the commit, whatever the outcome: an
// error may follow a commit that took place.
func (s *Store) tenantsWritten() {
	s.tenantCache.answers.Clear()
	s.tenantCache.mu.Lock()
	fn := s.tenantCache.onWrite
	s.tenantCache.mu.Unlock()
	if fn != nil {
		fn()
	}
}
