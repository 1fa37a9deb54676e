package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"
)

// AuditEvent is one record of the audit log: who did what to what, from
// where, with the fields it changed (secrets already masked by the
// recorder). The log is appended to and pruned by age only; nothing
// changes a record.
type AuditEvent struct {
	bun.BaseModel `bun:"table:audit_events"`

	ID         int64     `bun:"id,pk,autoincrement"`
	At         time.Time `bun:"at,notnull"`
	ActorID    *int64    `bun:"actor_id"`
	Actor      string    `bun:"actor,notnull"` // the username, "cli" or "system"
	Client     string    `bun:"client,notnull"`
	Action     string    `bun:"action,notnull"`
	TargetType string    `bun:"target_type,notnull"`
	TargetID   string    `bun:"target_id,notnull"`
	TargetName string    `bun:"target_name,notnull"`
	Fields     string    `bun:"fields,notnull"` // a JSON object
}

// AuditFilter selects audit records; zero fields select everything.
type AuditFilter struct {
	Actor      string
	Action     string
	TargetType string
	From, To   time.Time // From inclusive, To exclusive
}

// MaxAuditPage bounds one page of audit records.
const MaxAuditPage = 500

// RecordAudit appends e to the audit log, stamping it now when it has no
// time.
func (s *Store) RecordAudit(ctx context.Context, e *AuditEvent) error {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	if e.Fields == "" {
		e.Fields = "{}"
	}
	if _, err := s.DB.NewInsert().Model(e).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("store: unable to record an audit event: %w", err)
	}
	return nil
}

func (f AuditFilter) apply(q *bun.SelectQuery) *bun.SelectQuery {
	if f.Actor != "" {
		q = q.Where("actor = ?", f.Actor)
	}
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	if f.TargetType != "" {
		q = q.Where("target_type = ?", f.TargetType)
	}
	if !f.From.IsZero() {
		q = q.Where("at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		q = q.Where("at < ?", f.To.UTC())
	}
	return q
}

// ParseAuditCursor reads the cursor AuditEvents' pages end with.
func ParseAuditCursor(after string) (int64, error) {
	if after == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(after, 10, 64)
	if err != nil || id < 1 {
		return 0, Invalid("after", "is not a cursor of this list")
	}
	return id, nil
}

// AuditEvents returns up to first records of f, newest first, after the
// record whose cursor is after (none: from the newest). more says whether
// another page follows.
func (s *Store) AuditEvents(ctx context.Context, f AuditFilter, first int, after string) (events []AuditEvent, more bool, err error) {
	if first < 1 || first > MaxAuditPage {
		return nil, false, Invalid("first", "must be between 1 and %d, not %d", MaxAuditPage, first)
	}
	afterID, err := ParseAuditCursor(after)
	if err != nil {
		return nil, false, err
	}
	q := f.apply(s.reader().NewSelect().Model(&events)).OrderExpr("id DESC").Limit(int64(first + 1))
	if afterID > 0 {
		q = q.Where("id < ?", afterID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, false, fmt.Errorf("store: unable to list audit events: %w", err)
	}
	if len(events) > first {
		return events[:first], true, nil
	}
	return events, false, nil
}

// AuditCursor is the cursor of e for AuditEvents' after.
func AuditCursor(e AuditEvent) string { return strconv.FormatInt(e.ID, 10) }

// PruneAuditEvents deletes the audit records older than cutoff and says
// how many it deleted.
func (s *Store) PruneAuditEvents(ctx context.Context, cutoff time.Time) (int64, error) {
	r, err := s.DB.NewDelete().Model((*AuditEvent)(nil)).Where("at < ?", cutoff.UTC()).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: unable to prune the audit log: %w", err)
	}
	n, _ := r.RowsAffected()
	return n, nil
}
