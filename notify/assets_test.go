package notify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// ingestBatch writes inds for feed through the runner's batch sink, as a
// run does, with the asset watch and allowlist of an instance.
func ingestBatch(t *testing.T, e *env, feed *store.Feed, al *ingest.Allowlist, inds ...ioc.Indicator) {
	t.Helper()
	ctx := context.Background()
	sink := ingest.NewBatchSink(e.st, feed.ID, 0, ingest.BatchOptions{Retention: 30 * 24 * time.Hour, Now: e.clock.Now,
		Allowlist: al, Watch: e.assets})
	for _, ind := range inds {
		if err := sink.Indicator(ctx, ind); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.assets.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func hitsOf(t *testing.T, e *env, ctx context.Context, tenant *string) []store.AssetHit {
	t.Helper()
	hits, err := e.assets.Hits(ctx, tenant, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// A run that stores or re-sights an IoC covering a tenant's asset records
// one hit per (asset, IoC, feed) until the IoC expires, notifies the
// tenant's channels (and root's), never another tenant's; allowlisted
// values never hit.
func TestIngestedIoCsHitTenantAssets(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		c := newClock()
		e := newEnv(t, st, c)
		acme, globex := newTenant(t, st, "Acme"), newTenant(t, st, "Globex")
		actx, gctx := tenantCtx(acme), tenantCtx(globex)
		if err := e.assets.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.assets.Add(actx, acme, []string{"198.51.100.0/24", "acme.example", "https://portal.example.net/acme/", "8.8.8.8"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.assets.Add(gctx, globex, []string{"192.0.2.1"}); err != nil {
			t.Fatal(err)
		}
		for _, x := range []struct {
			ctx    context.Context
			events []string
		}{{actx, []string{store.EventAssetHit}}, {gctx, []string{store.EventAssetHit}}, {rootCtx(), []string{store.EventAssetHit}}} {
			if _, _, err := e.channels.Create(x.ctx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "hits",
				Target: []string{"https://hooks.example.org/x"}, Events: x.events}); err != nil {
				t.Fatal(err)
			}
		}
		al := ingest.NewAllowlist(st, e.bus, nil)
		if err := al.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		feed := newFeed(t, st, "botnet")
		ingestBatch(t, e, feed, al,
			ioc.Indicator{Kind: ioc.IP, Value: "198.51.100.25", Score: 80, Tags: []string{"c2"}},
			ioc.Indicator{Kind: ioc.Domain, Value: "mail.acme.example", Score: 60},
			ioc.Indicator{Kind: ioc.URL, Value: "https://portal.example.net/acme/login.php", Score: 70},
			ioc.Indicator{Kind: ioc.URL, Value: "https://portal.example.net/other/", Score: 70},
			ioc.Indicator{Kind: ioc.IP, Value: "203.0.113.9", Score: 90},
			ioc.Indicator{Kind: ioc.IP, Value: "8.8.8.8", Score: 90}, // public DNS: allowlisted
		)
		hits := hitsOf(t, e, actx, nil)
		if len(hits) != 3 {
			t.Fatalf("Acme's hits = %+v, want 3", hits)
		}
		byValue := map[string]store.AssetHit{}
		for _, h := range hits {
			byValue[h.IoCValue] = h
		}
		ip := byValue["198.51.100.25"]
		if ip.Asset != "198.51.100.0/24" || ip.Score != 80 || len(ip.Tags) != 1 || ip.Tags[0] != "c2" || ip.FeedName != "botnet" ||
			ip.IoCType != "ip" || ip.TenantID != acme || !ip.Expires().Equal(c.Now().Add(30*24*time.Hour)) {
			t.Fatalf("hit = %+v", ip)
		}
		if byValue["mail.acme.example"].Asset != "acme.example" || byValue["https://portal.example.net/acme/login.php"].Asset == "" {
			t.Fatalf("hits = %+v", hits)
		}
		if got := hitsOf(t, e, gctx, nil); len(got) != 0 {
			t.Fatalf("Globex got hits: %+v", got)
		}
		if got := hitsOf(t, e, rootCtx(), nil); len(got) != 3 {
			t.Fatalf("root sees %d hits, want every tenant's 3", len(got))
		}
		// Notified to Acme's channel and root's, 3 hits each.
		box := outbox(t, st)
		if len(box) != 6 {
			t.Fatalf("outbox has %d notifications, want 6", len(box))
		}
		for _, m := range box {
			if m["event"] != store.EventAssetHit || m["tenant"] != acme || data(m)["feedName"] != "botnet" {
				t.Fatalf("notification = %v", m)
			}
		}
		clearOutbox(t, st)
		// Re-sighted while live: no new hit, no notification.
		c.Add(time.Hour)
		ingestBatch(t, e, feed, al, ioc.Indicator{Kind: ioc.IP, Value: "198.51.100.25", Score: 85})
		if got := hitsOf(t, e, actx, nil); len(got) != 3 || len(outbox(t, st)) != 0 {
			t.Fatalf("a re-sighting hit again: %d hits, %d notifications", len(got), len(outbox(t, st)))
		}
		// Another feed reporting it is another hit.
		other := newFeed(t, st, "other")
		ingestBatch(t, e, other, al, ioc.Indicator{Kind: ioc.IP, Value: "198.51.100.25", Score: 50})
		if got := hitsOf(t, e, actx, nil); len(got) != 4 {
			t.Fatalf("%d hits after another feed's sighting, want 4", len(got))
		}
		clearOutbox(t, st)
		// Once the IoC expired, a sighting hits anew.
		c.Add(31 * 24 * time.Hour)
		ingestBatch(t, e, feed, al, ioc.Indicator{Kind: ioc.IP, Value: "198.51.100.25", Score: 85})
		if box := outbox(t, st); len(box) != 2 {
			t.Fatalf("after expiry: %d notifications, want 2", len(box))
		}
		// Deleting an asset stops its hits.
		if n, err := e.assets.Delete(actx, acme, []string{"198.51.100.0/24"}); n != 1 || err != nil {
			t.Fatalf("deleted %d, %v", n, err)
		}
		clearOutbox(t, st)
		ingestBatch(t, e, feed, al, ioc.Indicator{Kind: ioc.IP, Value: "198.51.100.26", Score: 85})
		if box := outbox(t, st); len(box) != 0 {
			t.Fatalf("a deleted asset hit: %v", box)
		}
	})
}

// Adding an asset matches the IoCs stored already (in the background),
// leaving out expired and allowlisted ones.
func TestAddingAssetsMatchesStoredIoCs(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		c := newClock()
		e := newEnv(t, st, c)
		acme := newTenant(t, st, "Acme")
		feed := newFeed(t, st, "phish")
		ctx := context.Background()
		if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: feed.ID, Retention: 24 * time.Hour, Now: c.Now(), Indicators: []ioc.Indicator{
			{Kind: ioc.Domain, Value: "login.acme.example", Score: 90, Tags: []string{"phishing"}},
			{Kind: ioc.URL, Value: "http://203.0.113.7/acme", Score: 40},
			{Kind: ioc.Domain, Value: "old.acme.example", Score: 10, ValidUntil: c.Now().Add(time.Minute)},
			{Kind: ioc.Domain, Value: "unrelated.example", Score: 90},
		}}); err != nil {
			t.Fatal(err)
		}
		c.Add(2 * time.Minute) // old.acme.example expired
		runCtx, cancel := context.WithCancel(ctx)
		defer func() { cancel(); e.assets.Wait() }()
		if err := e.assets.Start(runCtx); err != nil {
			t.Fatal(err)
		}
		added, err := e.assets.Add(tenantCtx(acme), acme, []string{"acme.example", "203.0.113.0/24", "acme.example"})
		if err != nil || len(added) != 2 {
			t.Fatalf("added %v, %v", added, err)
		}
		var hits []store.AssetHit
		for deadline := time.Now().Add(20 * time.Second); len(hits) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			hits = hitsOf(t, e, tenantCtx(acme), nil)
		}
		if len(hits) != 2 {
			t.Fatalf("back-matched hits = %+v, want 2", hits)
		}
		got := map[string]string{}
		for _, h := range hits {
			got[h.IoCValue] = h.Asset
		}
		if got["login.acme.example"] != "acme.example" || got["http://203.0.113.7/acme"] != "203.0.113.0/24" {
			t.Fatalf("hits = %+v", hits)
		}
		// Adding it again adds nothing.
		if again, err := e.assets.Add(tenantCtx(acme), acme, []string{"ACME.example"}); err != nil || len(again) != 0 {
			t.Fatalf("re-added %v, %v", again, err)
		}
	})
}

// A tenant's users see and manage only their tenant's assets, hits and
// channels; invalid values are refused with a field error; the limit holds.
func TestAssetsAndChannelsAreScopedToTheTenant(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, newClock())
		acme, globex := newTenant(t, st, "Acme"), newTenant(t, st, "Globex")
		actx := tenantCtx(acme)
		if _, err := e.assets.Add(actx, globex, []string{"192.0.2.1"}); !errors.Is(err, auth.ErrForbidden) {
			t.Fatalf("adding to another tenant: %v", err)
		}
		if _, _, err := e.assets.List(actx, globex, 10, 0); !errors.Is(err, auth.ErrForbidden) {
			t.Fatalf("listing another tenant's: %v", err)
		}
		if _, err := e.assets.Hits(actx, &globex, 10, 0); !errors.Is(err, auth.ErrForbidden) {
			t.Fatalf("another tenant's hits: %v", err)
		}
		_, err := e.assets.Add(actx, acme, []string{"192.0.2.1", "not an asset!", "10.0.0.0/4"})
		var ve *store.ValidationError
		if !errors.As(err, &ve) || ve.Field != "values" {
			t.Fatalf("invalid values: %v", err)
		}
		gch, _, err := e.channels.Create(rootCtx(), notify.ChannelInput{Kind: store.ChannelWebhook, Name: "g", TenantID: &globex,
			Target: []string{"https://hooks.example.org/g"}, Events: []string{store.EventAssetHit}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.channels.Create(actx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "x", TenantID: &globex,
			Target: []string{"https://hooks.example.org/x"}, Events: []string{store.EventAssetHit}}); !errors.Is(err, auth.ErrForbidden) {
			t.Fatalf("creating another tenant's channel: %v", err)
		}
		if _, _, err := e.channels.Create(actx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "x",
			Target: []string{"https://hooks.example.org/x"}, Events: []string{store.EventFeedHealth}}); !errors.As(err, &ve) || ve.Field != "events" {
			t.Fatalf("a tenant's FEED_HEALTH channel: %v", err)
		}
		ach, _, err := e.channels.Create(actx, notify.ChannelInput{Kind: store.ChannelEmail, Name: "mine",
			Target: []string{"soc@acme.example"}, Events: []string{store.EventAssetHit}})
		if err != nil || ach.TenantID == nil || *ach.TenantID != acme {
			t.Fatalf("own channel: %+v, %v", ach, err)
		}
		list, err := e.channels.List(actx)
		if err != nil || len(list) != 1 || list[0].ID != ach.ID {
			t.Fatalf("Acme lists %+v, %v", list, err)
		}
		if all, _ := e.channels.List(rootCtx()); len(all) != 2 {
			t.Fatalf("root lists %d channels, want 2", len(all))
		}
		for name, fn := range map[string]func() error{
			"test":       func() error { return e.channels.Test(actx, gch.ID) },
			"delete":     func() error { return e.channels.Delete(actx, gch.ID) },
			"deliveries": func() error { _, err := e.channels.Deliveries(actx, gch.ID, 10, 0); return err },
		} {
			if err := fn(); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s of another tenant's channel: %v", name, err)
			}
		}
		if err := e.channels.Delete(actx, ach.ID); err != nil {
			t.Fatal(err)
		}
		// Without an SMTP server, email channels are refused up front.
		e.channels.NoEmail = true
		if _, _, err := e.channels.Create(actx, notify.ChannelInput{Kind: store.ChannelEmail, Name: "mine",
			Target: []string{"soc@acme.example"}, Events: []string{store.EventAssetHit}}); !errors.As(err, &ve) || ve.Field != "to" {
			t.Fatalf("an email channel without SMTP: %v", err)
		}
		// The limit of a tenant's assets.
		many := make([]string, notify.MaxAssets)
		for i := range many {
			many[i] = "10." + itoa(i>>16) + "." + itoa(i>>8&255) + "." + itoa(i&255)
		}
		if added, err := e.assets.Add(actx, acme, many); err != nil || len(added) != notify.MaxAssets {
			t.Fatalf("adding the most a tenant may have: %d, %v", len(added), err)
		}
		if _, err := e.assets.Add(actx, acme, []string{"192.0.2.200"}); !errors.As(err, &ve) || ve.Field != "values" {
			t.Fatalf("more than the limit of assets: %v", err)
		}
		if page, n, err := e.assets.List(actx, acme, 1000, 0); err != nil || n != notify.MaxAssets || len(page) != 1000 {
			t.Fatalf("list: %d of %d, %v", len(page), n, err)
		}
	})
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
