package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// IoCTexts returns the texts of the IoCs among ids that have one (Rule
// IoCs: the IDS signature), by IoC id.
func (s *Store) IoCTexts(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	for chunk := range slices.Chunk(ids, sqliteLookupChunk) {
		var rows []struct {
			IoCID int64  `bun:"ioc_id"`
			Text  string `bun:"text"`
		}
		if err := s.reader().NewSelect().Table("ioc_texts").Column("ioc_id", "text").
			Where("ioc_id IN (?)", bun.In(chunk)).Scan(ctx, &rows); err != nil {
			return nil, fmt.Errorf("store: unable to read the texts of %d indicators: %w", len(chunk), err)
		}
		for _, r := range rows {
			out[r.IoCID] = r.Text
		}
	}
	return out, nil
}

// RuleTextSQL and RuleActionsAllowedSQL are, for the iocs row of a Rule
// IoC in a query, its text (the signature) and whether the feed owning
// that text may keep the rule's action (feeds.allow_rule_actions; NULL
// when no feed owns it). Every reader that hands rules out reads both, so
// that each gives a rule the same action (ioc.AlertOnly otherwise).
const (
	RuleTextSQL           = `(SELECT t.text FROM ioc_texts t WHERE t.ioc_id = iocs.id)`
	RuleActionsAllowedSQL = `(SELECT f.allow_rule_actions FROM ioc_texts t JOIN feeds f ON f.id = t.feed_id WHERE t.ioc_id = iocs.id)`
)

// RuleActions is what the rules export needs to know of the feeds' rule
// actions: the feeds whose rules keep theirs (by id, in order), and the
// latest update of any feed, which is no earlier than the last change of
// an allowance.
type RuleActions struct {
	Allowed     []int64
	FeedUpdated time.Time
}

// RuleActions reads the feeds' allowances of rule actions.
func (s *Store) RuleActions(ctx context.Context) (RuleActions, error) {
	var out RuleActions
	var feeds []Feed
	if err := s.reader().NewSelect().Model(&feeds).Column("id", "allow_rule_actions", "updated_at").Order("id").Scan(ctx); err != nil {
		return out, fmt.Errorf("store: unable to read the feeds' rule actions: %w", err)
	}
	for _, f := range feeds {
		if f.AllowRuleActions {
			out.Allowed = append(out.Allowed, f.ID)
		}
		if f.UpdatedAt.After(out.FeedUpdated) {
			out.FeedUpdated = f.UpdatedAt
		}
	}
	return out, nil
}
