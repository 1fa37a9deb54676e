package ttlcache

import (
	"testing"
	"time"
)

func TestGetPutExpire(t *testing.T) {
	c := New[string, int](time.Minute, 10)
	now := time.Now()
	_, ok, gen := c.Get("a", now)
	if ok {
		t.Fatal("an empty cache answered")
	}
	c.Put("a", 1, gen, now)
	if v, ok, _ := c.Get("a", now.Add(59*time.Second)); !ok || v != 1 {
		t.Fatalf("Get before expiry = %d, %v", v, ok)
	}
	if _, ok, _ := c.Get("a", now.Add(61*time.Second)); ok {
		t.Fatal("an expired value answered")
	}
}

// A value read before an invalidation is not kept: it may be stale.
func TestInvalidationBeatsAReadUnderWay(t *testing.T) {
	now := time.Now()
	for name, invalidate := range map[string]func(c *Cache[string, int]){
		"Clear":      func(c *Cache[string, int]) { c.Clear() },
		"Delete":     func(c *Cache[string, int]) { c.Delete("other") },
		"DeleteFunc": func(c *Cache[string, int]) { c.DeleteFunc(func(int) bool { return false }) },
	} {
		c := New[string, int](time.Minute, 10)
		_, _, gen := c.Get("a", now)
		invalidate(c)
		c.Put("a", 1, gen, now)
		if _, ok, _ := c.Get("a", now); ok {
			t.Errorf("%s: a value read before it was kept", name)
		}
	}
}

func TestDeleteFuncDropsWhatMatches(t *testing.T) {
	c := New[string, int](time.Minute, 10)
	now := time.Now()
	_, _, gen := c.Get("", now)
	for k, v := range map[string]int{"a": 1, "b": 2, "c": 3} {
		c.Put(k, v, gen, now)
	}
	c.DeleteFunc(func(v int) bool { return v%2 == 1 })
	for k, want := range map[string]bool{"a": false, "b": true, "c": false} {
		if _, ok, _ := c.Get(k, now); ok != want {
			t.Errorf("%s kept = %v, want %v", k, ok, want)
		}
	}
}

func TestOffAndBounded(t *testing.T) {
	now := time.Now()
	off := New[string, int](0, 10)
	_, _, gen := off.Get("a", now)
	off.Put("a", 1, gen, now)
	if _, ok, _ := off.Get("a", now); ok {
		t.Error("a cache with no TTL kept a value")
	}
	c := New[int, int](time.Minute, 3)
	_, _, gen = c.Get(0, now)
	for i := range 4 {
		c.Put(i, i, gen, now)
	}
	n := 0
	for i := range 4 {
		if _, ok, _ := c.Get(i, now); ok {
			n++
		}
	}
	if n > 3 {
		t.Errorf("%d values kept, at most 3 allowed", n)
	}
	c.SetTTL(-1)
	if _, ok, _ := c.Get(3, now); ok {
		t.Error("turning the cache off kept its values")
	}
}
