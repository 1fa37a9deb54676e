package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func rule(sid, text string) ioc.Indicator {
	return ioc.Indicator{Kind: ioc.Rule, Value: "sid:" + sid, Source: "rules", Score: 50, Text: text}
}

// ruleOwner is the text stored for a rule and the feed that owns its sid
// (0 for none).
func ruleOwner(t *testing.T, s *store.Store, value string) (int64, string) {
	t.Helper()
	var owner sql.NullInt64
	var text string
	if err := s.DB.QueryRowContext(context.Background(), `SELECT t.feed_id, t.text FROM ioc_texts t
JOIN iocs i ON i.id = t.ioc_id WHERE i.type = 'rule' AND i.value = ?`, value).Scan(&owner, &text); err != nil {
		t.Fatalf("the text of %s: %v", value, err)
	}
	return owner.Int64, text
}

// A feed never replaces the rule of a sid another feed owns: the first feed
// that stored it keeps it while its sighting of it is live, and may update
// it; another feed's different rule for the sid is rejected with both
// feeds named, and the same rule from it is only a sighting. Once the
// owner's sighting expires, or the owner is deleted, the sid is free.
func TestRuleSidBelongsToItsFeed(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		et, custom := newFeed(t, s, "ET_OPEN_RULES"), newFeed(t, s, "TAXII_acme")
		const etRule = `alert http any any -> any any (msg:"ET test"; sid:2000001; rev:1;)`
		apply(t, s, store.Batch{FeedID: et, Now: t0, Retention: 10 * day, Indicators: []ioc.Indicator{rule("2000001", etRule)}})

		const passRule = `pass http any any -> any any (msg:"acme"; sid:2000001; rev:9;)`
		res := apply(t, s, store.Batch{FeedID: custom, Now: t0.Add(time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{
			dom("a.example", "s", 50), rule("2000001", passRule)}})
		if res.Stored != 1 || len(res.Rejections) != 1 {
			t.Fatalf("the other feed's rule: stored %d, rejections %+v; want the domain stored and the rule rejected", res.Stored, res.Rejections)
		}
		if r := res.Rejections[0]; r.At != 1 || !strings.Contains(r.Reason, "sid:2000001") ||
			!strings.Contains(r.Reason, `"ET_OPEN_RULES"`) || !strings.Contains(r.Reason, `"TAXII_acme"`) {
			t.Errorf("rejection %+v: want the rule's place and a reason naming the sid and both feeds", r)
		}
		if owner, text := ruleOwner(t, s, "sid:2000001"); owner != et || text != etRule {
			t.Errorf("after the other feed's rule: owner %d text %q, want %d and ET's", owner, text, et)
		}
		if ss, err := s.Sightings(ctx, getIoC(t, s, ioc.Rule, "sid:2000001").ID); err != nil || len(ss) != 1 {
			t.Errorf("sightings of the rule: %+v, %v; want only the owner's", ss, err)
		}

		// The same rule from another feed replaces nothing: a sighting.
		res = apply(t, s, store.Batch{FeedID: custom, Now: t0.Add(2 * time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{rule("2000001", etRule)}})
		if res.Stored != 1 || len(res.Rejections) != 0 {
			t.Errorf("the same rule from another feed: stored %d, rejections %+v", res.Stored, res.Rejections)
		}

		// The owner updates its rule.
		const etRule2 = `alert http any any -> any any (msg:"ET test"; sid:2000001; rev:2;)`
		res = apply(t, s, store.Batch{FeedID: et, Now: t0.Add(3 * time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{rule("2000001", etRule2)}})
		if res.Stored != 1 || len(res.Rejections) != 0 {
			t.Errorf("the owner's update: stored %d, rejections %+v", res.Stored, res.Rejections)
		}
		if owner, text := ruleOwner(t, s, "sid:2000001"); owner != et || text != etRule2 {
			t.Errorf("after the owner's update: owner %d text %q", owner, text)
		}

		// The owner's sighting expires (the other feed's, a day younger,
		// is still live): the sid is free for the other feed's rule.
		res = apply(t, s, store.Batch{FeedID: custom, Now: t0.Add(10*day + 4*time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{rule("2000001", passRule)}})
		if res.Stored != 1 || len(res.Rejections) != 0 {
			t.Errorf("after the owner's rule expired: stored %d, rejections %+v", res.Stored, res.Rejections)
		}
		if owner, text := ruleOwner(t, s, "sid:2000001"); owner != custom || text != passRule {
			t.Errorf("after the owner's rule expired: owner %d text %q, want %d and its rule", owner, text, custom)
		}

		// Deleting the owner frees its sids at once, while another feed's
		// sighting keeps the rule.
		apply(t, s, store.Batch{FeedID: custom, Now: t0.Add(11 * day), Retention: 10 * day, Indicators: []ioc.Indicator{rule("2000002", passRule)}})
		apply(t, s, store.Batch{FeedID: et, Now: t0.Add(11 * day), Retention: 10 * day, Indicators: []ioc.Indicator{rule("2000002", passRule)}})
		if err := s.DeleteFeed(ctx, custom); err != nil {
			t.Fatal(err)
		}
		if owner, _ := ruleOwner(t, s, "sid:2000002"); owner != 0 {
			t.Errorf("the deleted feed %d still owns sid:2000002", owner)
		}
		res = apply(t, s, store.Batch{FeedID: et, Now: t0.Add(11*day + time.Hour), Retention: 10 * day, Indicators: []ioc.Indicator{rule("2000002", etRule2)}})
		if len(res.Rejections) != 0 {
			t.Errorf("after the owner was deleted: rejections %+v", res.Rejections)
		}
		if owner, text := ruleOwner(t, s, "sid:2000002"); owner != et || text != etRule2 {
			t.Errorf("after the owner was deleted: owner %d text %q", owner, text)
		}
	})
}

// Migration 20261230000100 goes down to texts without owners and up again:
// the texts stay, and a rule one feed reports is that feed's again.
func TestRuleOwnersMigrationGoesBothWays(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := newFeed(t, s, "a"), newFeed(t, s, "b")
		const text = `alert ip any any -> any any (msg:"x"; sid:7;)`
		apply(t, s, store.Batch{FeedID: a, Now: t0, Retention: day, Indicators: []ioc.Indicator{rule("7", text), rule("8", text)}})
		apply(t, s, store.Batch{FeedID: b, Now: t0, Retention: day, Indicators: []ioc.Indicator{rule("8", text)}})
		if _, err := s.DB.ExecContext(ctx, "UPDATE feeds SET allow_rule_actions = TRUE WHERE id = ?", a); err != nil {
			t.Fatal(err)
		}
		m, mig := migration(t, s, "20261230000100")
		if err := mig.Down(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s, "ioc_texts"); n != 2 {
			t.Errorf("%d texts after going down, want 2", n)
		}
		if err := mig.Up(ctx, m, mig); err != nil {
			t.Fatal(err)
		}
		if owner, got := ruleOwner(t, s, "sid:7"); owner != a || got != text {
			t.Errorf("sid:7 after going up: owner %d text %q, want %d", owner, got, a)
		}
		// Reported by two feeds, it is claimed by the next one that stores it.
		if owner, _ := ruleOwner(t, s, "sid:8"); owner != 0 {
			t.Errorf("sid:8 after going up: owner %d, want none", owner)
		}
		if n := countRows(t, s, "feeds WHERE allow_rule_actions"); n != 0 {
			t.Errorf("%d feeds allow rule actions after going up, want none", n)
		}
	})
}
