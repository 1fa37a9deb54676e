package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/events/eventstest"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// Assets added on one instance are in force on another sharing the
// PostgreSQL database: the bus's signal rebuilds its index.
func TestAssetsAddedOnOneInstanceHitOnAnother(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := eventstest.NewInstance(t, dsn), eventstest.NewInstance(t, dsn)
	c := newClock()
	onA := &notify.Assets{Store: a.Store, Bus: a.Bus, Audit: audit.New(a.Store, nil), Now: c.Now}
	onB := &notify.Assets{Store: b.Store, Bus: b.Bus, Audit: audit.New(b.Store, nil), Now: c.Now}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); onB.Wait() }()
	if err := onB.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if onB.Covers(ioc.Domain, "mail.acme.example") {
		t.Fatal("covered before any asset")
	}
	acme := newTenant(t, a.Store, "Acme")
	if _, err := onA.Add(tenantCtx(acme), acme, []string{"acme.example"}); err != nil {
		t.Fatal(err)
	}
	if !onA.Covers(ioc.Domain, "mail.acme.example") {
		t.Fatal("not in force on the instance that added it")
	}
	for deadline := time.Now().Add(eventstest.DeliveryWait); !onB.Covers(ioc.Domain, "mail.acme.example"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other instance never matched the new asset")
		}
	}
	if _, err := onA.Delete(tenantCtx(acme), acme, []string{"acme.example"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(eventstest.DeliveryWait); onB.Covers(ioc.Domain, "mail.acme.example"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other instance still matches a deleted asset")
		}
	}
}
