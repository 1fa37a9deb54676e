package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// AllowlistEntry is one operator allowlist entry. Kind and Value are as
// allowlist.ParseEntry returns them; the store does not interpret them.
type AllowlistEntry struct {
	bun.BaseModel `bun:"table:allowlist_entries"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Kind      string    `bun:"kind,notnull"`
	Value     string    `bun:"value,notnull"`
	Comment   string    `bun:"comment,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

// allowlistLockID serialises the bounded inserts of allowlist entries on
// PostgreSQL (see insertBounded).
const allowlistLockID = 0x7466656564730010

// ErrAllowlistFull is returned when the allowlist holds its maximum.
var ErrAllowlistFull = errors.New("the allowlist is full")

// AllowlistEntries returns every entry, oldest first.
func (s *Store) AllowlistEntries(ctx context.Context) ([]AllowlistEntry, error) {
	var out []AllowlistEntry
	if err := s.reader().NewSelect().Model(&out).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to read the allowlist: %w", err)
	}
	return out, nil
}

// AddAllowlistEntry stores e unless max entries exist (ErrAllowlistFull);
// a value listed already is ErrConflict.
func (s *Store) AddAllowlistEntry(ctx context.Context, e *AllowlistEntry, max int) error {
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now().UTC()
	}
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if s.Dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", int64(allowlistLockID)); err != nil {
				return fmt.Errorf("store: unable to lock the allowlist: %w", err)
			}
		}
		n, err := tx.NewSelect().Model((*AllowlistEntry)(nil)).Count(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to count the allowlist: %w", err)
		}
		if n >= int64(max) {
			return fmt.Errorf("store: %w (%d entries)", ErrAllowlistFull, max)
		}
		if _, err := tx.NewInsert().Model(e).Returning("id").Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("store: %q is on the allowlist already: %w", e.Value, ErrConflict)
			}
			return fmt.Errorf("store: unable to add %q to the allowlist: %w", e.Value, err)
		}
		return nil
	})
}

// DeleteAllowlistEntry deletes the entry id and returns it; ErrNotFound
// when there is none.
func (s *Store) DeleteAllowlistEntry(ctx context.Context, id int64) (*AllowlistEntry, error) {
	e := &AllowlistEntry{}
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model(e).Where("id = ?", id).Scan(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*AllowlistEntry)(nil)).Where("id = ?", id).Exec(ctx)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to delete allowlist entry %d: %w", id, err)
	}
	return e, nil
}

// purgePage is how many IoCs DeleteIoCsMatching reads, and at most
// deletes, per transaction.
const purgePage = 5000

// DeleteIoCsMatching deletes the IoCs of kind whose value matches the LIKE
// pattern (ESCAPE '\'; "" for all) and for which match is true, with their
// sightings and texts, in transactions of a few thousand. The pattern only
// narrows what is read: match decides. It returns how many IoCs it
// deleted; each transaction that deleted some moves ioc_stats, so export
// validators change.
func (s *Store) DeleteIoCsMatching(ctx context.Context, kind ioc.Kind, pattern string, match func(value string) bool) (int64, error) {
	return s.deleteIoCsWalking(ctx, []ioc.Kind{kind}, pattern, func(_ ioc.Kind, v string) bool { return match(v) }, nil)
}

// DeleteIoCsOfKindsMatching deletes the IoCs of the kinds for which match
// is true, as DeleteIoCsMatching does, in ONE walk over the IoCs in id
// order for all the kinds together (without an index on (type, id), a
// walk per kind reads the whole table once per kind). It calls page, when
// not nil, before it reads each page: an error from page ends the deletion
// with that error (what was deleted so far stays deleted).
func (s *Store) DeleteIoCsOfKindsMatching(ctx context.Context, kinds []ioc.Kind, match func(kind ioc.Kind, value string) bool, page func(ctx context.Context) error) (int64, error) {
	return s.deleteIoCsWalking(ctx, kinds, "", match, page)
}

// deleteIoCsWalking walks the IoCs of kinds (whose value matches the LIKE
// pattern, when not "") in id order, purgePage at a time, and deletes
// those match accepts, a transaction a page; page, when not nil, is called
// before each page is read.
func (s *Store) deleteIoCsWalking(ctx context.Context, kinds []ioc.Kind, pattern string, match func(kind ioc.Kind, value string) bool, page func(ctx context.Context) error) (int64, error) {
	if len(kinds) == 0 {
		return 0, nil
	}
	var deleted int64
	var after int64
	for {
		if page != nil {
			if err := page(ctx); err != nil {
				return deleted, err
			}
		}
		var rows []idValue
		q := s.reader().NewSelect().Table("iocs").Column("id", "type", "value").
			Where("type IN (?)", bun.In(kinds)).Where("id > ?", after).Order("id").Limit(purgePage)
		if pattern != "" {
			q = q.Where(`value LIKE ? ESCAPE '\'`, pattern)
		}
		if err := q.Scan(ctx, &rows); err != nil {
			return deleted, fmt.Errorf("store: unable to read %s indicators: %w", kindNames(kinds), err)
		}
		var ids []int64
		for _, r := range rows {
			if match(r.Type, r.Value) {
				ids = append(ids, r.ID)
			}
		}
		n, err := s.deleteIoCs(ctx, ids)
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("store: unable to delete allowlisted %s indicators: %w", kindNames(kinds), err)
		}
		if len(rows) < purgePage {
			return deleted, nil
		}
		after = rows[len(rows)-1].ID
	}
}

// kindNames names kinds in an error: "ip", "ip, domain".
func kindNames(kinds []ioc.Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// idValue is an IoC as the deletions read it.
type idValue struct {
	ID    int64    `bun:"id"`
	Type  ioc.Kind `bun:"type"`
	Value string   `bun:"value"`
}

// deleteIoCs deletes the IoCs ids with their sightings and texts in one
// transaction, moving ioc_stats when it deleted some.
func (s *Store) deleteIoCs(ctx context.Context, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var deleted int64
	err := s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		err := s.keepCounts(ctx, tx, ids, func() error {
			if _, err := tx.ExecContext(ctx, "DELETE FROM sighting_rows WHERE ioc_id IN (?)", bun.In(ids)); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM ioc_texts WHERE ioc_id IN (?)", bun.In(ids)); err != nil {
				return err
			}
			r, err := tx.ExecContext(ctx, "DELETE FROM iocs WHERE id IN (?)", bun.In(ids))
			if err != nil {
				return err
			}
			deleted, _ = r.RowsAffected()
			return nil
		})
		if err != nil {
			return err
		}
		if err := dropGoneKeys(ctx, tx, s.orderKeys(), ids); err != nil {
			return err
		}
		exec := func(ctx context.Context, query string, args ...any) (int64, error) {
			r, err := tx.ExecContext(ctx, strings.NewReplacer("$1", "?", "$2", "?").Replace(query), args...)
			if err != nil {
				return 0, err
			}
			return r.RowsAffected()
		}
		return bumpIoCStats(ctx, exec, -deleted)
	})
	if err != nil {
		return 0, err
	}
	return deleted, nil
}
