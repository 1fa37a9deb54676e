package ingest

import (
	"context"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestBuiltinFeedsDelivered: one feed per kind, enabled, 24 h, not
// editable, deletable or resettable; a second start (an upgrade, another
// instance) adds nothing; a kind this build has no source for fails its
// run with Fetching Data Error saying so, without reaching any network.
func TestBuiltinFeedsDelivered(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st, tsv.Options{})
		for range 2 {
			if err := h.r.EnsureBuiltinFeeds(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if n := h.count("SELECT COUNT(*) FROM feeds WHERE type = 'builtin'"); n != 8 {
			t.Fatalf("%d built-in feeds delivered, want 8", n)
		}
		var ids []int64
		if err := st.DB.NewRaw("SELECT id FROM feeds WHERE kind = ?", string(builtin.IDSRules)).Scan(context.Background(), &ids); err != nil || len(ids) != 1 {
			t.Fatalf("IDS rules feed: %v %v", ids, err)
		}
		f := h.feed(ids[0])
		if !f.Enabled || f.PollingFrequency != 24 || f.Editable() || f.Deletable() || f.Resettable() {
			t.Errorf("delivered as %+v", f)
		}
		ctx := context.Background()
		if _, err := h.m.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{Description: new(string)}); err == nil || !strings.Contains(err.Error(), "built-in feeds cannot be edited") {
			t.Errorf("edit: %v", err)
		}
		if err := h.m.DeleteFeed(ctx, f.ID); err == nil {
			t.Error("delete accepted")
		}
		if _, err := h.m.ResetPremiumFeed(ctx, f.ID); err == nil {
			t.Error("reset accepted")
		}
		run := h.runNow(f.ID)
		if run.ErrorKind != string(ioc.FetchingDataError) || !strings.Contains(run.ErrorDetail, "cannot fetch this built-in feed yet") {
			t.Errorf("run of a kind without a source: %q %q", run.ErrorKind, run.ErrorDetail)
		}
	})
}
