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

	// The background removal of what dropping lists match
	// (RemovePendingInBackground): running while a goroutine removes,
	// again when it should look for pending removals once more.
	removeMu      sync.Mutex
	removeRunning bool
	removeAgain   bool
	removals      sync.WaitGroup
	// removalPage, when not nil, is called before each page of a list's
	// removal is read (tests hold a removal with it).
	removalPage func(ctx context.Context, list string)
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
			// A removal another instance started and left unfinished
			// (it stopped) is taken up here.
			a.RemovePendingInBackground(ctx)
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

// errRemovalStopped ends a list's removal: its action is no longer drop.
var errRemovalStopped = errors.New("ingest: the list no longer drops")

// background is the context removals run in: Watch's, or ctx without its
// cancellation (a request's) when Watch has not started.
func (a *Allowlist) background(ctx context.Context) context.Context {
	if done := a.done.Load(); done != nil {
		return *done
	}
	return context.WithoutCancel(ctx)
}

// RemoveListInBackground starts removing the stored IoCs that the list
// name matches (it turned to drop; its row's removal is pending) and
// returns at once; the removal runs again once the runs in flight have
// written what they prepared before they learned of the change.
func (a *Allowlist) RemoveListInBackground(ctx context.Context, name string) {
	a.RemovePendingInBackground(ctx)
	a.RemoveListAgainLater(ctx, name)
}

// RemoveListAgainLater marks the removal of what the list name matches as
// pending once more, a few seconds from now, as RemoveAgainLater does for
// an entry, if it still drops then, and removes it in the background.
func (a *Allowlist) RemoveListAgainLater(ctx context.Context, name string) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx := a.background(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(allowlistSettle):
		}
		if err := a.st.MarkWarninglistRemoval(ctx, name); err != nil {
			a.log.Warn("Unable to remove dropped indicators", "list", name, "error", err)
			return
		}
		a.RemovePendingInBackground(ctx)
	}()
}

// RemovePendingInBackground runs RemovePending on a goroutine of its own
// unless one runs already (which then looks once more when it is done);
// Wait and WaitRemovals wait for it.
func (a *Allowlist) RemovePendingInBackground(ctx context.Context) {
	a.removeMu.Lock()
	defer a.removeMu.Unlock()
	if a.removeRunning {
		a.removeAgain = true
		return
	}
	a.removeRunning = true
	a.removals.Add(1)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.removals.Done()
		ctx := a.background(ctx)
		for {
			if err := a.RemovePending(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("Unable to remove dropped indicators", "error", err)
			}
			a.removeMu.Lock()
			again := a.removeAgain && ctx.Err() == nil
			a.removeAgain = false
			if !again {
				a.removeRunning = false
			}
			a.removeMu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// WaitRemovals returns once the background removals started so far have
// ended.
func (a *Allowlist) WaitRemovals() { a.removals.Wait() }

// RemovePending removes the stored IoCs that the lists whose removal is
// pending match, a list at a time in pages of a few thousand IoCs, each
// deleted in a short transaction of its own; before each page it reads
// whether the removal is still pending, so that a list turned to flag or
// off stops being removed. A list's removal is cleared when it finished.
// One instance at a time removes (a cluster-wide lock); on the others it
// returns at once. A removal cut short by a stop is pending still, and the
// next start (or reload on another instance) takes it up again.
func (a *Allowlist) RemovePending(ctx context.Context) error {
	unlock, ok, err := a.st.TryLockWarninglistRemoval(ctx)
	if err != nil || !ok {
		return err
	}
	defer unlock()
	rows, err := a.st.Warninglists(ctx, false)
	if err != nil {
		return err
	}
	loaded := false
	for _, r := range rows {
		if !r.RemovalPending {
			continue
		}
		if !loaded {
			// The lists in force have the action that made it pending.
			if err := a.Load(ctx); err != nil {
				return err
			}
			loaded = true
		}
		n, err := a.removeList(ctx, r.Name)
		if n > 0 {
			a.log.Info("Removed dropped indicators", "list", r.Name, "count", n)
		}
		if errors.Is(err, errRemovalStopped) {
			continue
		}
		if err != nil {
			return err
		}
		if err := a.st.FinishWarninglistRemoval(ctx, r.Name); err != nil {
			return err
		}
	}
	return nil
}

// removeList removes the stored IoCs that the list name matches while its
// removal is pending (errRemovalStopped once it is not).
func (a *Allowlist) removeList(ctx context.Context, name string) (int64, error) {
	set := a.cur.Load()
	var total int64
	page := func(ctx context.Context) error {
		if hook := a.removalPage; hook != nil {
			hook(ctx, name)
		}
		pending, err := a.st.WarninglistRemovalPending(ctx, name)
		if err != nil {
			return err
		}
		if !pending {
			return errRemovalStopped
		}
		return nil
	}
	for _, l := range set.Lists() {
		if l.Name != name || l.Action != allowlist.Drop {
			continue
		}
		for _, kind := range l.Kinds {
			n, err := a.st.DeleteIoCsMatchingPaged(ctx, kind, "", func(v string) bool { return set.ListCovers(name, kind, v) }, page)
			total += n
			if err != nil {
				return total, fmt.Errorf("ingest: unable to remove the indicators %s matches: %w", name, err)
			}
		}
	}
	return total, nil
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
