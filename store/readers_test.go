package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestReadsAnswerWhileTheWriterIsHeld checks that what a request reads
// outside a transaction (its credential above all, which every
// authenticated request checks) does not queue for the writer. On SQLite
// the writer is one connection: a key indexer's chunk waiting for another
// process's batch, a sweep or a cleaner's pass held it for up to seconds,
// and every request whose credential had left the cache waited as long
// (1.1-2.1 s worsts in the growth curve at 10,000,000 IoCs).
func TestReadsAnswerWhileTheWriterIsHeld(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		root, err := s.CreateUser(ctx, "admin", "a long enough password", store.ScopeRoot, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, key, err := s.CreateAPIKey(ctx, root.ID, "reader", "")
		if err != nil {
			t.Fatal(err)
		}
		session, err := s.CreateSession(ctx, root.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		feed := &store.Feed{Name: "OTX", Type: store.FeedBuiltin, Kind: "otx", Category: "builtin", Enabled: true, RetentionPeriod: 30}
		if err := s.CreateFeed(ctx, feed); err != nil {
			t.Fatal(err)
		}

		defer storetest.HoldWrite(t, s, "UPDATE users SET enabled = enabled WHERE id = ?", root.ID)()

		// Each read gets long enough for any machine; one that queues for
		// the writer waits until release, after every check.
		answers := func(name string, read func(ctx context.Context) error) {
			t.Helper()
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := read(ctx); err != nil {
				t.Errorf("%s while the writer is held: %v", name, err)
			}
		}
		var cred store.Credential
		answers("AuthenticateAPIKey", func(ctx context.Context) (err error) {
			_, cred, err = s.AuthenticateAPIKey(ctx, "admin", key)
			return err
		})
		answers("CheckCredential", func(ctx context.Context) error { _, err := s.CheckCredential(ctx, cred); return err })
		answers("AuthenticateSession", func(ctx context.Context) error { _, _, err := s.AuthenticateSession(ctx, session); return err })
		answers("Ping", s.Ping)
		answers("UserByName", func(ctx context.Context) error { _, err := s.UserByName(ctx, "admin"); return err })
		answers("APIKeys", func(ctx context.Context) error { _, err := s.APIKeys(ctx, root.ID); return err })
		answers("Users", func(ctx context.Context) error { _, err := s.Users(ctx); return err })
		answers("Tenants", func(ctx context.Context) error { _, err := s.Tenants(ctx, store.Page{}); return err })
		answers("TenantGroups", func(ctx context.Context) error { _, err := s.TenantGroups(ctx, store.Page{}); return err })
		answers("Feeds", func(ctx context.Context) error {
			feeds, _, err := s.Feeds(ctx, store.FeedQuery{})
			if err == nil && len(feeds) != 1 {
				err = fmt.Errorf("%d feeds, want 1", len(feeds))
			}
			return err
		})
		answers("Feed", func(ctx context.Context) error { _, err := s.Feed(ctx, feed.ID); return err })
		answers("FeedRuns", func(ctx context.Context) error { _, err := s.FeedRuns(ctx, feed.ID, 10); return err })
		answers("AuditEvents", func(ctx context.Context) error {
			_, _, err := s.AuditEvents(ctx, store.AuditFilter{}, 10, "")
			return err
		})
		answers("Warninglists", func(ctx context.Context) error { _, err := s.Warninglists(ctx, false); return err })
		answers("AllowlistEntries", func(ctx context.Context) error { _, err := s.AllowlistEntries(ctx); return err })
	})
}
