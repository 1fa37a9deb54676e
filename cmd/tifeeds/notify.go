package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
)

// notifications are the notification services of one instance: the
// outbox worker, the channels, the asset and feed health watches.
type notifications struct {
	graph.Notifications
	worker *notify.Worker
}

// newNotifications builds the services; the asset index is loaded so that
// the runner's first runs already match.
func newNotifications(ctx context.Context, st *store.Store, dsn string, bus *events.Bus, log *slog.Logger, auditLog *audit.Log,
	mailer *notify.SMTP, eo egress.Options, lease time.Duration) (*notifications, error) {
	secrets, err := store.LoadSecrets(dsn)
	if err != nil {
		return nil, err
	}
	w := notify.NewWorker(notify.WorkerOptions{Store: st, Secrets: secrets, Webhooks: notify.NewWebhooks(eo), SMTP: mailer, Log: log, Lease: lease})
	n := &notifications{worker: w, Notifications: graph.Notifications{
		Channels: &notify.Channels{Store: st, Secrets: secrets, Audit: auditLog, Worker: w, NoEmail: mailer == nil},
		Assets:   &notify.Assets{Store: st, Bus: bus, Worker: w, Audit: auditLog, Log: log},
		Health:   &notify.Health{Store: st, Bus: bus, Worker: w, Audit: auditLog, Log: log},
	}}
	if err := n.Assets.Load(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// start runs the worker and the watches until the returned stop is called.
func (n *notifications) start(ctx context.Context) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if err := n.Assets.Start(ctx); err != nil {
		cancel()
		return nil, err
	}
	n.Health.Watch(ctx)
	n.worker.Start(ctx)
	return func() {
		cancel()
		n.worker.Wait()
		n.Assets.Wait()
		n.Health.Wait()
	}, nil
}
