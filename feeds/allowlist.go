package feeds

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/store"
)

// Bounds of the user allowlist.
const (
	MaxAllowlistEntries = 100000
	MaxAllowlistComment = 500 // characters
)

// AllowlistStore is what the allowlist changes need of the store.
type AllowlistStore interface {
	AllowlistEntries(ctx context.Context) ([]store.AllowlistEntry, error)
	AddAllowlistEntry(ctx context.Context, e *store.AllowlistEntry, max int) error
	DeleteAllowlistEntry(ctx context.Context, id int64) (*store.AllowlistEntry, error)
	WarninglistStore
}

// AllowlistInForce is the allowlist ingestion applies on this instance
// (ingest.Allowlist).
type AllowlistInForce interface {
	// Load reads the user entries again and puts them in force.
	Load(ctx context.Context) error
	// Remove removes the stored IoCs that e covers.
	Remove(ctx context.Context, e store.AllowlistEntry) (int64, error)
	// RemoveAgainLater removes them once more when the runs in flight have
	// written what they prepared before they learned of e.
	RemoveAgainLater(ctx context.Context, e store.AllowlistEntry)
	WarninglistsInForce
}

// Allowlist carries out the API's changes to the user allowlist.
type Allowlist struct {
	st      AllowlistStore
	inForce AllowlistInForce
	bus     *events.Bus
	log     *slog.Logger
	audit   *audit.Log // nil records nothing
}

// NewAllowlist returns the changes of the user entries of st, put in force
// in inForce here and announced on bus to the other instances.
func NewAllowlist(st AllowlistStore, inForce AllowlistInForce, bus *events.Bus, log *slog.Logger) *Allowlist {
	if log == nil {
		log = slog.Default()
	}
	return &Allowlist{st: st, inForce: inForce, bus: bus, log: log}
}

// Entries returns the user entries, oldest first.
func (a *Allowlist) Entries(ctx context.Context) ([]store.AllowlistEntry, error) {
	return a.st.AllowlistEntries(ctx)
}

// Add validates and stores a user entry, puts it in force here and on the
// other instances, and removes the IoCs it covers from the store. removed
// counts those.
func (a *Allowlist) Add(ctx context.Context, value, comment string) (e *store.AllowlistEntry, removed int64, err error) {
	kind, norm, err := allowlist.ParseEntry(value)
	if err != nil {
		return nil, 0, store.Invalid("value", "%s", strings.TrimPrefix(err.Error(), allowlist.ErrInvalidEntry.Error()+": "))
	}
	if n := utf8.RuneCountInString(comment); n > MaxAllowlistComment || !utf8.ValidString(comment) {
		return nil, 0, store.Invalid("comment", "at most %d characters of valid UTF-8, got %d", MaxAllowlistComment, n)
	}
	e = &store.AllowlistEntry{Kind: string(kind), Value: norm, Comment: comment}
	if err := a.st.AddAllowlistEntry(ctx, e, MaxAllowlistEntries); err != nil {
		if errors.Is(err, store.ErrAllowlistFull) {
			return nil, 0, store.Invalid("value", "the allowlist holds its maximum of %d entries", MaxAllowlistEntries)
		}
		return nil, 0, err
	}
	if err := a.inForce.Load(ctx); err != nil {
		a.log.Warn("Unable to reload the allowlist", "error", err)
	}
	a.bus.PublishSignal(events.SignalAllowlist)
	a.audit.Record(ctx, audit.AllowlistAdd, allowlistTarget(e), map[string]any{"kind": e.Kind, "value": e.Value, "comment": e.Comment})
	removed, err = a.inForce.Remove(ctx, *e)
	if err != nil {
		return e, removed, err
	}
	a.inForce.RemoveAgainLater(ctx, *e)
	return e, removed, nil
}

// Delete removes a user entry: the next runs store what it covered again.
func (a *Allowlist) Delete(ctx context.Context, id int64) (*store.AllowlistEntry, error) {
	e, err := a.st.DeleteAllowlistEntry(ctx, id)
	if err != nil {
		return nil, err
	}
	a.audit.Record(ctx, audit.AllowlistDelete, allowlistTarget(e), nil)
	if err := a.inForce.Load(ctx); err != nil {
		a.log.Warn("Unable to reload the allowlist", "error", err)
	}
	a.bus.PublishSignal(events.SignalAllowlist)
	return e, nil
}

func allowlistTarget(e *store.AllowlistEntry) audit.Target {
	return audit.Target{Type: audit.TargetAllowlist, ID: strconv.FormatInt(e.ID, 10), Name: e.Value}
}
