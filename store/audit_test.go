package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestAuditEventsFilterPageAndPrune(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		id := int64(7)
		records := []store.AuditEvent{
			{At: now.Add(-400 * 24 * time.Hour), Actor: "admin", ActorID: &id, Action: "feed.update", TargetType: "feed", TargetID: "1"},
			{At: now.Add(-2 * time.Hour), Actor: "admin", ActorID: &id, Action: "feed.update", TargetType: "feed", TargetID: "1",
				Fields: `{"name":"x"}`, Client: "192.0.2.1"},
			{At: now.Add(-time.Hour), Actor: "cli", Action: "user.create", TargetType: "user", TargetID: "2"},
			{At: now, Actor: "mallory", Action: "auth.sign_in_failed", TargetType: "user", TargetName: "mallory"},
		}
		for i := range records {
			if err := s.RecordAudit(ctx, &records[i]); err != nil {
				t.Fatal(err)
			}
		}
		all, more, err := s.AuditEvents(ctx, store.AuditFilter{}, 10, "")
		if err != nil || more || len(all) != 4 || all[0].Action != "auth.sign_in_failed" {
			t.Fatalf("all = %+v, more %v, err %v", all, more, err)
		}
		if all[2].Fields != `{"name":"x"}` || all[2].Client != "192.0.2.1" || all[2].ActorID == nil || *all[2].ActorID != 7 {
			t.Errorf("record read back = %+v", all[2])
		}
		if all[0].Fields != "{}" {
			t.Errorf("fields without changes = %q, want {}", all[0].Fields)
		}
		for name, c := range map[string]struct {
			f    store.AuditFilter
			want int
		}{
			"actor":       {store.AuditFilter{Actor: "admin"}, 2},
			"action":      {store.AuditFilter{Action: "user.create"}, 1},
			"target type": {store.AuditFilter{TargetType: "user"}, 2},
			"from":        {store.AuditFilter{From: now.Add(-90 * time.Minute)}, 2},
			"to":          {store.AuditFilter{To: now.Add(-90 * time.Minute)}, 2},
			"together":    {store.AuditFilter{Actor: "admin", From: now.Add(-24 * time.Hour)}, 1},
		} {
			got, _, err := s.AuditEvents(ctx, c.f, 10, "")
			if err != nil || len(got) != c.want {
				t.Errorf("%s: %d records (err %v), want %d", name, len(got), err, c.want)
			}
		}
		// Pages follow each other without gaps or repeats.
		var seen []int64
		after := ""
		for {
			page, more, err := s.AuditEvents(ctx, store.AuditFilter{}, 3, after)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				seen = append(seen, e.ID)
			}
			if !more {
				break
			}
			after = store.AuditCursor(page[len(page)-1])
		}
		if len(seen) != 4 || seen[0] != all[0].ID || seen[3] != all[3].ID {
			t.Errorf("paged ids = %v", seen)
		}
		var invalid *store.ValidationError
		if _, _, err := s.AuditEvents(ctx, store.AuditFilter{}, 0, ""); !errors.As(err, &invalid) || invalid.Field != "first" {
			t.Errorf("first 0: %v", err)
		}
		if _, _, err := s.AuditEvents(ctx, store.AuditFilter{}, 1, "x"); !errors.As(err, &invalid) || invalid.Field != "after" {
			t.Errorf("a bad cursor: %v", err)
		}
		// Retention: the records older than the cutoff go, the others stay.
		n, err := s.PruneAuditEvents(ctx, now.Add(-365*24*time.Hour))
		if err != nil || n != 1 {
			t.Fatalf("pruned %d (err %v), want 1", n, err)
		}
		left, _, _ := s.AuditEvents(ctx, store.AuditFilter{}, 10, "")
		if len(left) != 3 {
			t.Errorf("%d records left, want 3", len(left))
		}
	})
}
