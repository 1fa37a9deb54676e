package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// Every transaction that writes iocs first brings the change stamp (unix
// microseconds, ioc_stats.stamp: the last one taken) up to its clock, then
// gives every IoC row it inserts or updates a stamp of its own, the next
// one up (takeStamps). Stamps are taken under the write lock (SQLite's one
// writer, PostgreSQL's iocWriteLockID) and are never below the last one
// taken plus one, whatever the clocks of the instances say: a transaction
// that commits later has higher stamps than every row a reader could have
// seen before. So (changed_at, id) is a keyset in commit order, which TAXII
// pages along without losing or repeating an IoC while ingestion goes on;
// and since no two rows written so share a stamp, changed_at alone orders
// them, which TAXII's added_after needs (docs/decisions.md). Rows written
// before stamps were per row may share one; the id orders those.

// stampSQL brings ioc_stats.stamp, the last stamp taken, up to the
// writer's clock $1 (less the microsecond $2 = $1 - 1, so that the next
// stamp taken is $1), never down.
const stampSQL = `UPDATE ioc_stats SET stamp = CASE WHEN stamp + 1 > $1 THEN stamp ELSE $2 END WHERE id = 1`

// stampChange starts a transaction's change of iocs: the stamps it takes
// from there on are at least the writer's clock.
func stampChange(ctx context.Context, exec func(ctx context.Context, query string, args ...any) (int64, error)) error {
	now := micros(time.Now())
	if _, err := exec(ctx, stampSQL, now, now-1); err != nil {
		return fmt.Errorf("store: unable to stamp a change of indicators: %w", err)
	}
	return nil
}

// takeStampsSQL takes $1 stamps, and counts them among the changes ($2,
// the same number: ioc_stats.changes, markChangesSQL).
const takeStampsSQL = `UPDATE ioc_stats SET stamp = stamp + $1, changes = changes + $2 WHERE id = 1`

// takeStamps reserves n change stamps for the IoC rows a statement of the
// transaction is about to write, one each, and returns the first: the rows
// take first, first+1, ... first+n-1. read reads ioc_stats.stamp, the last
// stamp taken, in the transaction. A row the statement ends up not writing
// (it was there already) leaves a gap, which costs nothing: stamps need
// only be distinct and rising.
func takeStamps(ctx context.Context, read func(ctx context.Context) (int64, error),
	exec func(ctx context.Context, query string, args ...any) (int64, error), n int) (int64, error) {
	last, err := read(ctx)
	if err == nil {
		_, err = exec(ctx, takeStampsSQL, n, n)
	}
	if err != nil {
		return 0, fmt.Errorf("store: unable to stamp indicators: %w", err)
	}
	return last + 1, nil
}

// ChangeKey is an IoC's place in change order: its change stamp (unix
// microseconds) and id.
type ChangeKey struct {
	At int64
	ID int64
}

// ChangedAt is the stamp as a time.
func (k ChangeKey) ChangedAt() time.Time { return fromMicros(k.At) }

// IoCChangesQuery selects IoCs in change order.
type IoCChangesQuery struct {
	// Kinds limits the IoCs to these kinds; empty: every kind.
	Kinds []ioc.Kind
	// After starts after this key (the zero key: from the first IoC).
	After ChangeKey
	// Limit bounds the rows; 0: no bound.
	Limit int
	// WithText also reads the text of Rule IoCs (the signature).
	WithText bool
}

// IoCChange is one row of IoCChanges.
type IoCChange struct {
	IoC
	Key ChangeKey
	// Text is the signature of a Rule IoC, with WithText.
	Text string
	// RuleActionsAllowed says the feed owning the rule's text may keep its
	// action (feeds.allow_rule_actions), with WithText; otherwise what is
	// handed out says alert (ioc.AlertOnly).
	RuleActionsAllowed bool
}

// IoCChanges calls fn with each IoC q selects, in change order, from one
// query whose rows are never all in memory. fn's row is reused: it must not
// keep it. An error of fn ends the rows and is returned.
func (s *Store) IoCChanges(ctx context.Context, q IoCChangesQuery, fn func(*IoCChange) error) error {
	var (
		b    strings.Builder
		args []any
	)
	b.WriteString(`SELECT id, type, value, score, tags, first_seen, last_seen, expires_at, changed_at`)
	if q.WithText {
		b.WriteString(`, CASE WHEN type = 'rule' THEN ` + RuleTextSQL + ` END`)
		b.WriteString(`, CASE WHEN type = 'rule' THEN ` + RuleActionsAllowedSQL + ` END`)
	}
	// The row-value comparison reads iocs_changed_idx from the key on.
	b.WriteString(` FROM iocs WHERE (changed_at, id) > (?, ?)`)
	args = append(args, q.After.At, q.After.ID)
	if len(q.Kinds) > 0 {
		b.WriteString(` AND type IN (?)`)
		kinds := make([]string, len(q.Kinds))
		for i, k := range q.Kinds {
			kinds[i] = string(k)
		}
		args = append(args, bun.In(kinds))
	}
	b.WriteString(` ORDER BY changed_at, id`)
	if q.Limit > 0 {
		b.WriteString(` LIMIT ?`)
		args = append(args, q.Limit)
	}
	rows, err := s.reader().QueryContext(ctx, b.String(), args...)
	if err != nil {
		return fmt.Errorf("store: unable to read indicators in change order: %w", err)
	}
	defer rows.Close()
	var (
		row  IoCChange
		tags []byte
		text sql.NullString
		keep sql.NullBool
		dest = []any{&row.ID, &row.Type, &row.Value, &row.Score, &tags,
			&row.FirstSeenMicros, &row.LastSeenMicros, &row.ExpiresAtMicros, &row.Key.At}
	)
	if q.WithText {
		dest = append(dest, &text, &keep)
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("store: unable to read an indicator in change order: %w", err)
		}
		row.Key.ID = row.ID
		row.Tags = row.Tags[:0]
		if len(tags) > 0 {
			if err := json.Unmarshal(tags, &row.Tags); err != nil {
				return fmt.Errorf("store: unable to read the tags of indicator %d: %w", row.ID, err)
			}
		}
		row.FirstSeen, row.LastSeen, row.ExpiresAt = row.times()
		row.Text, row.RuleActionsAllowed = text.String, keep.Bool
		if err := fn(&row); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: unable to read indicators in change order: %w", err)
	}
	return nil
}
