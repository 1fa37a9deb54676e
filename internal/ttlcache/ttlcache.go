// Package ttlcache keeps answers for a short time, for reads that may be
// served slightly stale but must never outlive an invalidation: the
// generation a lookup returns makes Put drop an answer read before an
// invalidation that came while it was being read.
package ttlcache

import (
	"sync"
	"time"
)

// Cache maps keys to values that expire ttl after they were put. A Cache
// is off (nothing is kept) until SetTTL gives it a positive ttl. It holds
// at most max entries; past that it starts over. The zero Cache is off.
type Cache[K comparable, V any] struct {
	mu  sync.Mutex
	ttl time.Duration
	max int
	// gen moves on every invalidation.
	gen     uint64
	entries map[K]entry[V]
}

type entry[V any] struct {
	value   V
	expires time.Time
}

// New returns a cache of at most max entries kept for ttl (off when ttl
// is 0 or less).
func New[K comparable, V any](ttl time.Duration, max int) *Cache[K, V] {
	c := &Cache[K, V]{max: max}
	c.SetTTL(ttl)
	return c
}

// SetTTL sets how long values are kept; 0 or less turns the cache off.
func (c *Cache[K, V]) SetTTL(ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ttl = ttl
	if ttl <= 0 {
		clear(c.entries)
	}
}

// Get returns the value of k unless it expired, and the generation to pass
// to Put when the caller reads the value itself.
func (c *Cache[K, V]) Get(k K, now time.Time) (v V, ok bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if ok && now.After(e.expires) {
		delete(c.entries, k)
		ok = false
	}
	return e.value, ok, c.gen
}

// Put keeps v for k, read since gen, unless an invalidation came meanwhile.
func (c *Cache[K, V]) Put(k K, v V, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl <= 0 || c.gen != gen {
		return
	}
	if c.entries == nil || len(c.entries) >= c.max {
		c.entries = map[K]entry[V]{}
	}
	c.entries[k] = entry[V]{value: v, expires: now.Add(c.ttl)}
}

// Clear drops every value, and the answers of reads under way.
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// Delete drops the value of k, and the answers of reads under way.
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, k)
}

// DeleteFunc drops the values for which drop is true, and the answers of
// reads under way. drop runs under the cache's lock: it must not block.
func (c *Cache[K, V]) DeleteFunc(drop func(V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, e := range c.entries {
		if drop(e.value) {
			delete(c.entries, k)
		}
	}
}
