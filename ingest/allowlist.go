package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// allowlistSettle is how long after adding an entry its IoCs are removed a
// second time: a batch that a run prepared before it learned of the entry
// may commit after the first removal.
const allowlistSettle = 5 * time.Second

// Allowlist is the allowlist in force on this instance: the built-in lists
// and the user entries of the store, reloaded whenever an instance changes
// them (bus and fanout) and every refresh interval. Ingestion drops what
// it matches. The API's changes to the entries go through the feed service
// (feeds.Allowlist), which removes what a new entry covers with Remove and
// RemoveAgainLater.
type Allowlist struct {
	st  *store.Store
	bus *events.Bus
	log *slog.Logger

	cur    atomic.Pointer[allowlist.Set]
	reload sync.Mutex // one reload at a time, each reading the store anew
	wg     sync.WaitGroup
	// done ends the removals of RemoveAgainLater (the context of Watch).
	done atomic.Pointer[context.Context]
}

// NewAllowlist returns the built-in lists; Load reads the user entries.
func NewAllowlist(st *store.Store, bus *events.Bus, log *slog.Logger) *Allowlist {
	if log == nil {
		log = slog.Default()
	}
	a := &Allowlist{st: st, bus: bus, log: log}
	a.cur.Store(allowlist.NewSet(nil))
	return a
}

// Match reports the entry covering a normalised indicator value.
func (a *Allowlist) Match(kind ioc.Kind, value string) (allowlist.Match, bool) {
	return a.cur.Load().Match(kind, value)
}

// Load reads the user entries from the store and puts them in force.
func (a *Allowlist) Load(ctx context.Context) error {
	a.reload.Lock()
	defer a.reload.Unlock()
	rows, err := a.st.AllowlistEntries(ctx)
	if err != nil {
		return err
	}
	entries := make([]allowlist.Entry, len(rows))
	for i, r := range rows {
		entries[i] = entryOf(r)
	}
	a.cur.Store(allowlist.NewSet(entries))
	return nil
}

// Watch reloads the entries on every change announced on the bus and every
// refresh, until ctx ends.
func (a *Allowlist) Watch(ctx context.Context, refresh time.Duration) {
	a.done.Store(&ctx)
	changed := make(chan struct{}, 1)
	cancel := a.bus.OnSignal(events.SignalAllowlist, func() {
		select {
		case changed <- struct{}{}:
		default: // a reload is due already and reads the latest entries
		}
	})
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		t := time.NewTicker(refresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
			case <-t.C:
			}
			if err := a.Load(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("Unable to reload the allowlist", "error", err)
			}
		}
	}()
}

// Wait returns once Watch and the removals started by Add have ended.
func (a *Allowlist) Wait() { a.wg.Wait() }

// Remove removes the stored IoCs that the user entry e covers.
func (a *Allowlist) Remove(ctx context.Context, e store.AllowlistEntry) (int64, error) {
	return a.remove(ctx, entryOf(e))
}

// RemoveAgainLater removes the IoCs e covers once more, a few seconds from
// now, once the runs in flight have written the batches they prepared
// before they learned of e. It gives up when Watch's context ends; Wait
// waits for it.
func (a *Allowlist) RemoveAgainLater(ctx context.Context, e store.AllowlistEntry) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx := context.WithoutCancel(ctx)
		if done := a.done.Load(); done != nil {
			ctx = *done
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(allowlistSettle):
		}
		if _, err := a.remove(ctx, entryOf(e)); err != nil {
			a.log.Warn("Unable to remove allowlisted indicators", "entry", e.Value, "error", err)
		}
	}()
}

// RemoveListed removes the stored IoCs that the allowlist in force covers:
// those stored before a list or entry existed (an upgrade, an entry added
// while this instance was down).
func (a *Allowlist) RemoveListed(ctx context.Context) (int64, error) {
	set := a.cur.Load()
	var total int64
	for _, kind := range []ioc.Kind{ioc.IP, ioc.Domain, ioc.URL} {
		n, err := a.st.DeleteIoCsMatching(ctx, kind, "", func(v string) bool {
			_, ok := set.Match(kind, v)
			return ok
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// RemoveListedInBackground runs RemoveListed on a goroutine of its own
// until ctx ends; Wait waits for it.
func (a *Allowlist) RemoveListedInBackground(ctx context.Context) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		n, err := a.RemoveListed(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.Warn("Unable to remove allowlisted indicators", "error", err)
		case n > 0:
			a.log.Info("Removed allowlisted indicators", "count", n)
		}
	}()
}

func (a *Allowlist) remove(ctx context.Context, e allowlist.Entry) (int64, error) {
	kind := e.Kind.IndicatorKind()
	n, err := a.st.DeleteIoCsMatching(ctx, kind, e.StorePattern(), func(v string) bool { return e.Covers(kind, v) })
	if err != nil {
		return n, fmt.Errorf("ingest: unable to remove the indicators %s covers: %w", e.Value, err)
	}
	return n, nil
}

func entryOf(r store.AllowlistEntry) allowlist.Entry {
	return allowlist.Entry{ID: r.ID, Kind: allowlist.EntryKind(r.Kind), Value: r.Value, Comment: r.Comment}
}
