package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/events/eventstest"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestWarninglistChangeReachesOtherInstances: an action changed and an own
// list imported on one instance are in force on another sharing the
// PostgreSQL database, through the fanout: flagged, then off, then a list
// of one's own that drops, then its deletion.
func TestWarninglistChangeReachesOtherInstances(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := eventstest.NewInstance(t, dsn), eventstest.NewInstance(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	la, lb := NewAllowlist(a.Store, a.Bus, nil), NewAllowlist(b.Store, b.Bus, nil)
	changes := feeds.NewAllowlist(a.Store, la, a.Bus, nil)
	// A refresh far off: only the notice can bring the change in time.
	la.Watch(ctx, time.Hour)
	lb.Watch(ctx, time.Hour)
	defer func() { cancel(); la.Wait(); lb.Wait() }()
	a.WaitListening(t, 0)
	b.WaitListening(t, 0)

	flagged := func() bool { return len(lb.Warnings(ioc.Domain, "x.duckdns.org")) == 1 }
	if !flagged() {
		t.Fatal("dynamic-dns does not flag by default")
	}
	if err := changes.SetWarninglistAction(ctx, "dynamic-dns", "off"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "B to turn dynamic-dns off", 20*time.Second, func() bool { return !flagged() })

	if _, err := changes.ImportWarninglist(ctx, "corp", []byte("11.22.33.0/24\n"), "drop"); err != nil {
		t.Fatal(err)
	}
	dropped := func() bool { m, ok := lb.Match(ioc.IP, "11.22.33.44"); return ok && m.List == "corp" }
	waitFor(t, "B to take A's list", 20*time.Second, dropped)
	if err := changes.DeleteWarninglist(ctx, "corp"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "B to drop A's deleted list", 20*time.Second, func() bool { return !dropped() })
}
