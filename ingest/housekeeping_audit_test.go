package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func TestSweepPrunesTheAuditLogPastItsRetention(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarnessWith(t, st, tsv.Options{}, func(o *Options) { o.AuditRetention = 30 * 24 * time.Hour })
		now := h.clock.Now()
		for _, age := range []time.Duration{31 * 24 * time.Hour, 29 * 24 * time.Hour, 0} {
			if err := st.RecordAudit(ctx, &store.AuditEvent{At: now.Add(-age), Actor: "admin", Action: "feed.update"}); err != nil {
				t.Fatal(err)
			}
		}
		h.r.sweep(ctx)
		if n := h.count(`SELECT COUNT(*) FROM audit_events`); n != 2 {
			t.Errorf("%d audit records after the sweep, want 2 (the one past 30 days gone)", n)
		}
		// A year on, with the default retention, all go.
		d := newHarnessWith(t, st, tsv.Options{}, nil)
		d.clock.Add(366 * 24 * time.Hour)
		d.r.sweep(ctx)
		if n := h.count(`SELECT COUNT(*) FROM audit_events`); n != 0 {
			t.Errorf("%d audit records a year on, want 0", n)
		}
	})
}
