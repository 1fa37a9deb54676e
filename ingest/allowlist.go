package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
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
	// removalPage, when not nil, is called before each page of a removal
	// is read, with the lists it removes (tests hold and count removals
	// with it).
	removalPage func(ctx context.Context, lists []string)
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

// errRemovalStopped ends a removal: none of its lists drops any longer.
var errRemovalStopped = errors.New("ingest: the lists no longer drop")

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

// StartRemovals is what a start does about the stored IoCs that dropping
// lists match, without a scan when nothing changed: a built-in list that
// drops and whose version or entry count differs from those its last
// finished removal recorded (a new version shipped, a default turned to
// drop, a database that never swept it) is marked pending, and the
// pending removals (those, and any a stop cut short) run in the
// background, once cluster-wide. A restart with nothing changed reads the
// lists' rows and removes nothing.
//
// Nothing else needs a sweep at start. Own lists carry their pending
// removal from their import, action change or refresh. A user entry's IoCs
// are removed by the instance that adds it (feeds.Allowlist.Add: Remove at
// once, RemoveAgainLater for the batches runs on any instance prepared
// before they learned of it), whichever instance stored them; only a stop
// within allowlistSettle of the addition loses that second pass.
func (a *Allowlist) StartRemovals(ctx context.Context) error {
	rows, err := a.st.Warninglists(ctx, false)
	if err != nil {
		return err
	}
	byName := map[string]store.Warninglist{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	for _, l := range a.cur.Load().Lists() {
		if !l.Builtin || l.Action != allowlist.Drop {
			continue
		}
		sw := sweepOf(l.Warninglist)
		if r, ok := byName[l.Name]; ok && r.Swept(sw) {
			continue
		}
		marked, err := a.st.MarkBuiltinWarninglistSweep(ctx, l.Name, sw, l.Default == allowlist.Drop)
		if err != nil {
			return err
		}
		if marked {
			a.log.Info("Removing the stored indicators a changed built-in warninglist drops", "list", l.Name, "version", l.Version)
		}
	}
	a.RemovePendingInBackground(ctx)
	return nil
}

func sweepOf(l *allowlist.Warninglist) store.WarninglistSweep {
	return store.WarninglistSweep{Version: l.Version, Entries: int64(l.Entries)}
}

// RemovePending removes the stored IoCs that the lists whose removal is
// pending match, all of them in one walk over the stored IoCs (of the
// kinds they apply to) in pages of a few thousand, each deleted in a short
// transaction of its own. Before each page it reads which removals are
// still pending, so that a list turned to flag or off stops being removed,
// and rests as long as the last page took (removalRest). A list's removal
// is cleared when the walk finished, and a built-in list's row records
// the version and entry count swept. One instance at a time removes (a
// cluster-wide lock); on the others it returns at once. A removal cut
// short by a stop is pending still, and the next start (or reload on
// another instance) takes it up again, from the start of the walk.
func (a *Allowlist) RemovePending(ctx context.Context) error {
	unlock, ok, err := a.st.TryLockWarninglistRemoval(ctx)
	if err != nil || !ok {
		return err
	}
	defer unlock()
	pending, err := a.st.PendingWarninglistRemovals(ctx)
	if err != nil || len(pending) == 0 {
		return err
	}
	// The lists in force have the action that made them pending.
	if err := a.Load(ctx); err != nil {
		return err
	}
	set := a.cur.Load()
	dropping := map[string]*allowlist.Warninglist{}
	for _, l := range set.Lists() {
		if l.Action == allowlist.Drop {
			dropping[l.Name] = l.Warninglist
		}
	}
	sweep := map[string]bool{}
	for _, name := range pending {
		if dropping[name] != nil {
			sweep[name] = true
			continue
		}
		// Deleted, or turned to flag or off since it was read pending:
		// nothing to remove.
		if err := a.st.FinishWarninglistRemoval(ctx, name, nil); err != nil {
			return err
		}
	}
	names := slices.Sorted(maps.Keys(sweep))
	n, err := a.removeLists(ctx, set, dropping, sweep)
	if n > 0 {
		a.log.Info("Removed dropped indicators", "list", strings.Join(names, ","), "count", n)
	}
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(sweep)) {
		var swept *store.WarninglistSweep
		if l := dropping[name]; l.Builtin {
			sw := sweepOf(l)
			swept = &sw
		}
		if err := a.st.FinishWarninglistRemoval(ctx, name, swept); err != nil {
			return err
		}
	}
	return nil
}

// removeLists removes the stored IoCs that the lists of sweep match, in
// one walk for them all; before each page it takes out of sweep the lists
// whose removal is no longer pending (they stop there, unfinished), and
// ends when none is left.
func (a *Allowlist) removeLists(ctx context.Context, set *allowlist.Set, lists map[string]*allowlist.Warninglist, sweep map[string]bool) (int64, error) {
	var kinds []ioc.Kind
	for name := range sweep {
		for _, k := range lists[name].MatchedKinds() {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	var last time.Time
	page := func(ctx context.Context) error {
		if !last.IsZero() {
			if err := removalRest(ctx, time.Since(last)); err != nil {
				return err
			}
		}
		if hook := a.removalPage; hook != nil {
			hook(ctx, slices.Sorted(maps.Keys(sweep)))
		}
		pending, err := a.st.PendingWarninglistRemovals(ctx)
		if err != nil {
			return err
		}
		maps.DeleteFunc(sweep, func(name string, _ bool) bool { return !slices.Contains(pending, name) })
		if len(sweep) == 0 {
			return errRemovalStopped
		}
		last = time.Now()
		return nil
	}
	n, err := a.st.DeleteIoCsOfKindsMatching(ctx, kinds, func(kind ioc.Kind, v string) bool { return set.ListsCover(sweep, kind, v) }, page)
	if errors.Is(err, errRemovalStopped) {
		return n, nil
	}
	if err != nil {
		return n, fmt.Errorf("ingest: unable to remove the indicators of dropping warninglists: %w", err)
	}
	return n, nil
}

// removalRest pauses a removal between two pages as long as the last one
// took. A removal is one goroutine waiting in turn on the database, so its
// work is at most one core at any moment; resting as much as it works
// halves that on average, leaving room to ingestion and reads on a busy
// node, and makes a removal of millions of IoCs take twice as long
// (docs/decisions.md).
func removalRest(ctx context.Context, took time.Duration) error { return feedhttp.Wait(ctx, took) }

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
