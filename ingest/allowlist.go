package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// ownListGCPercent is the collector's target while own lists are parsed.
const ownListGCPercent = 20

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
	// ownKey names the own lists (name and update time) ownIndex was built
	// from: a reload that finds the same ones reuses it (under reload).
	ownKey   string
	ownIndex *allowlist.Index
	// client fetches subscribed warninglists (useClient).
	client atomic.Pointer[http.Client]
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

// Set is the allowlist and warninglists in force.
func (a *Allowlist) Set() *allowlist.Set { return a.cur.Load() }

// Warnings returns the flagging warninglists that match a normalised
// indicator value.
func (a *Allowlist) Warnings(kind ioc.Kind, value string) []allowlist.Warning {
	return a.cur.Load().Warnings(kind, value)
}

// Load reads the user entries and the warninglists' actions and own lists
// from the store and puts them in force.
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
	lists, err := a.st.Warninglists(ctx, false)
	if err != nil {
		return err
	}
	actions := map[string]allowlist.Action{}
	var key strings.Builder
	for _, l := range lists {
		if act, ok := allowlist.ParseAction(l.Action); ok {
			actions[l.Name] = act
		}
		if !l.Builtin {
			fmt.Fprintf(&key, "%s\x00%d\x00", l.Name, l.UpdatedAt.UnixNano())
		}
	}
	if key.String() != a.ownKey {
		own, err := a.loadOwn(ctx, lists)
		if err != nil {
			return err
		}
		a.ownIndex, a.ownKey = own, key.String()
	}
	a.cur.Store(allowlist.NewSetWith(entries, a.ownIndex, actions))
	return nil
}

// loadOwn parses the own lists; one that no longer parses (a bound
// lowered since it was stored) is left out with a warning.
//
// Parsing holds a list's content, its entries and the index being built at
// once, about three times what the index keeps: the collector runs closer
// to the live heap meanwhile, so that a million entries do not lift the
// process's peak memory by that much again (docs/benchmarks.md).
func (a *Allowlist) loadOwn(ctx context.Context, lists []store.Warninglist) (*allowlist.Index, error) {
	defer debug.SetGCPercent(debug.SetGCPercent(ownListGCPercent))
	var parsed []*allowlist.Parsed
	for _, l := range lists {
		if l.Builtin {
			continue
		}
		w, err := a.st.Warninglist(ctx, l.Name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p, err := allowlist.Parse(w.Name, w.Content)
		if err != nil {
			a.log.Warn("Unable to read a warninglist", "list", w.Name, "error", err)
			continue
		}
		p.List.Default, _ = allowlist.ParseAction(w.Action)
		parsed = append(parsed, p)
	}
	if len(parsed) == 0 {
		return nil, nil
	}
	x := allowlist.NewIndex(parsed)
	// What parsing held goes back to the system now, not when the
	// scavenger gets to it: ingestion's own peak stacks on what is left.
	parsed = nil
	debug.FreeOSMemory()
	return x, nil
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
			if err := a.RefreshWarninglists(ctx, false); err != nil && ctx.Err() == nil {
				a.log.Warn("Unable to refresh a warninglist", "error", err)
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
	for _, kind := range []ioc.Kind{ioc.IP, ioc.Domain, ioc.URL, ioc.MD5, ioc.SHA1, ioc.SHA256, ioc.CertSHA1} {
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

// RemoveList removes the stored IoCs that the warninglist name matches:
// it turned to drop.
func (a *Allowlist) RemoveList(ctx context.Context, name string) (int64, error) {
	set := a.cur.Load()
	var total int64
	for _, l := range set.Lists() {
		if l.Name != name {
			continue
		}
		for _, kind := range l.Kinds {
			n, err := a.st.DeleteIoCsMatching(ctx, kind, "", func(v string) bool { return set.ListCovers(name, kind, v) })
			total += n
			if err != nil {
				return total, fmt.Errorf("ingest: unable to remove the indicators %s matches: %w", name, err)
			}
		}
	}
	return total, nil
}

// RemoveListAgainLater removes what the list name matches once more, as
// RemoveAgainLater does for an entry, if it still drops then.
func (a *Allowlist) RemoveListAgainLater(ctx context.Context, name string) {
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
		for _, l := range a.cur.Load().Lists() {
			if l.Name == name && l.Action == allowlist.Drop {
				if _, err := a.RemoveList(ctx, name); err != nil {
					a.log.Warn("Unable to remove dropped indicators", "list", name, "error", err)
				}
			}
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
