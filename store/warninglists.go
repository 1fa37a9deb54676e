package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Warninglist is the stored settings of a warninglist: the action of a
// built-in one, or an own list with its content (MISP JSON or plain text,
// as imported or last fetched from URL). The store does not interpret
// Content or Action.
type Warninglist struct {
	bun.BaseModel `bun:"table:warninglists"`

	Name string `bun:"name,pk"`
	// Action is empty on the row of a built-in list whose action root
	// never set: the row only records its sweep (MarkBuiltinWarninglistSweep),
	// and the list keeps its default, whatever later versions make it.
	Action    string     `bun:"action,notnull"`
	Builtin   bool       `bun:"builtin,notnull"`
	Content   []byte     `bun:"content"`
	URL       string     `bun:"url,notnull"`
	ETag      string     `bun:"etag,notnull"`
	FetchedAt *time.Time `bun:"fetched_at"`
	// RemovalPending is set while the stored IoCs a dropping list matches
	// are being removed in the background (set with action "drop", cleared
	// when the removal finished or the action changed).
	RemovalPending bool `bun:"removal_pending,notnull"`
	// SweptVersion and SweptEntries identify the content of a built-in
	// list when its last removal finished (nil: never).
	SweptVersion *int64    `bun:"swept_version"`
	SweptEntries *int64    `bun:"swept_entries"`
	UpdatedAt    time.Time `bun:"updated_at,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
}

// WarninglistSweep identifies the content of a built-in list that a
// removal swept: the version it ships with and its entry count (a list of
// ours edited without a new version still changes its count).
type WarninglistSweep struct {
	Version int64
	Entries int64
}

// Swept reports whether the row records sw as its last finished removal.
func (w *Warninglist) Swept(sw WarninglistSweep) bool {
	return w.SweptVersion != nil && w.SweptEntries != nil && *w.SweptVersion == sw.Version && *w.SweptEntries == sw.Entries
}

// warninglistLockID serialises the bounded inserts of own lists on
// PostgreSQL.
const warninglistLockID = 0x7466656564730027

// ErrWarninglistsFull is returned when the own lists are at their maximum.
var ErrWarninglistsFull = errors.New("too many warninglists")

// Warninglists returns every stored row by name; content only withContent.
func (s *Store) Warninglists(ctx context.Context, withContent bool) ([]Warninglist, error) {
	var out []Warninglist
	q := s.reader().NewSelect().Model(&out).Order("name")
	if !withContent {
		q = q.ExcludeColumn("content")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read the warninglists: %w", err)
	}
	return out, nil
}

// Warninglist returns one row with its content; ErrNotFound when none.
func (s *Store) Warninglist(ctx context.Context, name string) (*Warninglist, error) {
	w := &Warninglist{}
	err := s.reader().NewSelect().Model(w).Where("name = ?", name).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to read warninglist %q: %w", name, err)
	}
	return w, nil
}

// WarninglistDrop is the action whose setting marks a list's removal as
// pending (RemovalPending); the store interprets no other action.
const WarninglistDrop = "drop"

// SetBuiltinWarninglistAction stores the action of a built-in list: drop
// marks its removal pending, another action ends a pending one.
func (s *Store) SetBuiltinWarninglistAction(ctx context.Context, name, action string) error {
	now := time.Now().UTC()
	w := &Warninglist{Name: name, Action: action, Builtin: true, UpdatedAt: now, CreatedAt: now,
		RemovalPending: action == WarninglistDrop}
	_, err := s.DB.NewInsert().Model(w).On("CONFLICT (name) DO UPDATE").
		Set("action = EXCLUDED.action").Set("updated_at = EXCLUDED.updated_at").
		Set("removal_pending = EXCLUDED.removal_pending").Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to set the action of %q: %w", name, err)
	}
	return nil
}

// SetOwnWarninglistAction changes the action of an own list (and its
// pending removal, as SetBuiltinWarninglistAction); ErrNotFound when there
// is none of that name.
func (s *Store) SetOwnWarninglistAction(ctx context.Context, name, action string) error {
	r, err := s.DB.NewUpdate().Model((*Warninglist)(nil)).Set("action = ?", action).Set("updated_at = ?", time.Now().UTC()).
		Set("removal_pending = ?", action == WarninglistDrop).
		Where("name = ?", name).Where("builtin = ?", false).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to set the action of %q: %w", name, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// AddWarninglist stores an own list unless max own lists exist
// (ErrWarninglistsFull); a name in use is ErrConflict.
func (s *Store) AddWarninglist(ctx context.Context, w *Warninglist, max int) error {
	now := time.Now().UTC()
	w.Builtin, w.CreatedAt, w.UpdatedAt = false, now, now
	w.RemovalPending = w.Action == WarninglistDrop
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if s.Dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", int64(warninglistLockID)); err != nil {
				return fmt.Errorf("store: unable to lock the warninglists: %w", err)
			}
		}
		n, err := tx.NewSelect().Model((*Warninglist)(nil)).Where("builtin = ?", false).Count(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to count the warninglists: %w", err)
		}
		if n >= int64(max) {
			return fmt.Errorf("store: %w (%d)", ErrWarninglistsFull, max)
		}
		if _, err := tx.NewInsert().Model(w).Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("store: a warninglist is named %q already: %w", w.Name, ErrConflict)
			}
			return fmt.Errorf("store: unable to add warninglist %q: %w", w.Name, err)
		}
		return nil
	})
}

// UpdateWarninglistContent replaces an own list's content (a subscription
// fetched anew) with its ETag; ErrNotFound when there is none.
func (s *Store) UpdateWarninglistContent(ctx context.Context, name string, content []byte, etag string, fetched time.Time) error {
	r, err := s.DB.NewUpdate().Model((*Warninglist)(nil)).Set("content = ?", content).Set("etag = ?", etag).
		Set("fetched_at = ?", fetched.UTC()).Set("updated_at = ?", time.Now().UTC()).
		Where("name = ?", name).Where("builtin = ?", false).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to update warninglist %q: %w", name, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// TouchWarninglistFetch records a fetch that found the list unchanged.
func (s *Store) TouchWarninglistFetch(ctx context.Context, name string, fetched time.Time) error {
	_, err := s.DB.NewUpdate().Model((*Warninglist)(nil)).Set("fetched_at = ?", fetched.UTC()).
		Where("name = ?", name).Where("builtin = ?", false).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to update warninglist %q: %w", name, err)
	}
	return nil
}

// DeleteWarninglist deletes an own list; ErrNotFound when there is none
// (a built-in list cannot be deleted).
func (s *Store) DeleteWarninglist(ctx context.Context, name string) (*Warninglist, error) {
	w := &Warninglist{}
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model(w).ExcludeColumn("content").Where("name = ?", name).Where("builtin = ?", false).Scan(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*Warninglist)(nil)).Where("name = ?", name).Exec(ctx)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to delete warninglist %q: %w", name, err)
	}
	return w, nil
}

// IoCCursor is the cursor after row in order o, as IoCs' EndCursor would be
// for a page ending there: for a caller that keeps part of a page (the
// warnings filter of the IoCs page).
func IoCCursor(o IoCOrder, row *IoC) string { return encodeCursor(o, row) }

// MarkWarninglistRemoval marks the removal of what the list matches as
// pending again if it drops (its content changed, or runs in flight may
// have stored what it matches since the last removal).
func (s *Store) MarkWarninglistRemoval(ctx context.Context, name string) error {
	_, err := s.DB.NewUpdate().Model((*Warninglist)(nil)).Set("removal_pending = ?", true).
		Where("name = ?", name).Where("action = ?", WarninglistDrop).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to mark the removal of %q: %w", name, err)
	}
	return nil
}

// MarkBuiltinWarninglistSweep marks the removal of what the built-in list
// name matches as pending if it drops (its row's action is drop, or empty
// and defaultDrop) and its row does not record sw as swept; it makes the
// row, with an empty action (the default in force), when there is none.
// It reports whether it marked. The test and the mark are one statement,
// so an instance starting while another finishes the same sweep does not
// mark it again.
func (s *Store) MarkBuiltinWarninglistSweep(ctx context.Context, name string, sw WarninglistSweep, defaultDrop bool) (bool, error) {
	now := time.Now().UTC()
	_, err := s.DB.NewInsert().Model(&Warninglist{Name: name, Builtin: true, UpdatedAt: now, CreatedAt: now}).
		On("CONFLICT (name) DO NOTHING").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("store: unable to add the row of %q: %w", name, err)
	}
	q := s.DB.NewUpdate().Model((*Warninglist)(nil)).Set("removal_pending = ?", true).
		Where("name = ?", name).Where("builtin = ?", true).
		Where("swept_version IS NULL OR swept_entries IS NULL OR swept_version <> ? OR swept_entries <> ?", sw.Version, sw.Entries)
	if defaultDrop {
		q = q.Where("action IN (?, '')", WarninglistDrop)
	} else {
		q = q.Where("action = ?", WarninglistDrop)
	}
	r, err := q.Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("store: unable to mark the removal of %q: %w", name, err)
	}
	n, _ := r.RowsAffected()
	return n > 0, nil
}

// PendingWarninglistRemovals returns the names of the lists whose removal
// is pending.
func (s *Store) PendingWarninglistRemovals(ctx context.Context) ([]string, error) {
	var names []string
	err := s.reader().NewSelect().Model((*Warninglist)(nil)).Column("name").Where("removal_pending = ?", true).
		Order("name").Scan(ctx, &names)
	if err != nil {
		return nil, fmt.Errorf("store: unable to read the pending removals: %w", err)
	}
	return names, nil
}

// WarninglistRemovalPending reports whether the list's removal is still
// pending (false for a list without a row).
func (s *Store) WarninglistRemovalPending(ctx context.Context, name string) (bool, error) {
	var pending []bool
	err := s.reader().NewSelect().Model((*Warninglist)(nil)).Column("removal_pending").Where("name = ?", name).Scan(ctx, &pending)
	if err != nil {
		return false, fmt.Errorf("store: unable to read warninglist %q: %w", name, err)
	}
	return len(pending) == 1 && pending[0], nil
}

// FinishWarninglistRemoval clears the list's pending removal and, for a
// built-in list that swept (swept not nil), records what it swept.
func (s *Store) FinishWarninglistRemoval(ctx context.Context, name string, swept *WarninglistSweep) error {
	q := s.DB.NewUpdate().Model((*Warninglist)(nil)).Set("removal_pending = ?", false).Where("name = ?", name)
	if swept != nil {
		q = q.Set("swept_version = ?", swept.Version).Set("swept_entries = ?", swept.Entries)
	}
	_, err := q.Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to finish the removal of %q: %w", name, err)
	}
	return nil
}

// warninglistRemovalLock is the PostgreSQL advisory lock that lets one
// instance at a time remove what dropping lists match.
const warninglistRemovalLock = 0x7466656564730028

// TryLockWarninglistRemoval takes the cluster-wide lock of the
// warninglists' background removal if it is free, as TryLockFeed does: a
// session advisory lock on a connection held until unlock (no row or table
// lock). On SQLite it always succeeds.
func (s *Store) TryLockWarninglistRemoval(ctx context.Context) (unlock func(), ok bool, err error) {
	if s.Dialect != Postgres {
		return func() {}, true, nil
	}
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("store: unable to get a connection for the removal lock: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?)", int64(warninglistRemovalLock)).Scan(&ok); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("store: unable to take the removal lock: %w", err)
	}
	if !ok {
		conn.Close()
		return nil, false, nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(ctx, "SELECT pg_advisory_unlock(?)", int64(warninglistRemovalLock))
		conn.Close()
	}, true, nil
}
