package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/store"
)

// Defaults of the worker.
const (
	// RetryWindow is how long a notification is tried before it is given up.
	RetryWindow = 24 * time.Hour
	// DefaultLease is how long a claimed notification is a worker's: longer
	// than any attempt (WebhookTimeout, the SMTP timeout), so that only a
	// worker that died loses it.
	DefaultLease = 2 * time.Minute
	// MinLease is the shortest lease a server may set (--notify-lease):
	// longer than an attempt (WebhookTimeout; the SMTP timeout, 30 s), so
	// that a live worker never loses the notification it is sending.
	MinLease = 45 * time.Second
	// DefaultPoll is how often a worker looks for due notifications that
	// another instance wrote (its own wake it at once).
	DefaultPoll = time.Second
	firstRetry  = 10 * time.Second
	maxRetry    = time.Hour
	claimBatch  = 20
	// sendsAtOnce is how many of a claimed batch one worker sends at once.
	// One at a time, a delivery cost a channel read, the request and the
	// recording transaction in turn: 290 a second on PostgreSQL here, so a
	// batch that hit 1,500 assets delivered its last hits after 5 s.
	// Every claimed item is this worker's under its lease, so sending them
	// side by side changes nothing of once-only delivery; a channel's
	// notifications were never ordered (a retry goes after later ones).
	sendsAtOnce = 8
)

// Backoff is the wait after a notification's attempt-th failed attempt:
// 10 s doubling to an hour.
func Backoff(attempt int) time.Duration {
	d := firstRetry
	for i := 1; i < attempt && d < maxRetry; i++ {
		d *= 2
	}
	return min(d, maxRetry)
}

// OutboxStore is what the worker needs of the store.
type OutboxStore interface {
	ClaimOutbox(ctx context.Context, now, leaseUntil time.Time, token string, limit int) ([]store.OutboxItem, error)
	FinishDelivery(ctx context.Context, item *store.OutboxItem, token string, d *store.Delivery, next time.Time) error
	Channel(ctx context.Context, id int64) (*store.NotifyChannel, error)
}

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	Store    OutboxStore
	Secrets  *store.Secrets
	Webhooks *Webhooks
	// SMTP sends email; nil: email channels fail (and are retried) until
	// the server is configured.
	SMTP *SMTP
	Log  *slog.Logger
	// Now is the clock (time.Now when nil); Lease and Poll default to
	// DefaultLease and DefaultPoll. A shorter Lease hands a killed
	// worker's notifications to another sooner (the server's
	// --notify-lease, at least MinLease; tests go below).
	Now   func() time.Time
	Lease time.Duration
	Poll  time.Duration
}

// Worker sends the outbox's due notifications. Every instance runs one;
// leases keep them from sending the same notification twice.
type Worker struct {
	o    WorkerOptions
	wake chan struct{}
	wg   sync.WaitGroup
}

// NewWorker returns a worker; Start runs it.
func NewWorker(o WorkerOptions) *Worker {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	return &Worker{o: o, wake: make(chan struct{}, 1)}
}

// Wake makes the worker look for due notifications now (this instance
// wrote some).
func (w *Worker) Wake() {
	if w == nil {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Start sends due notifications until ctx ends; Wait waits for it.
func (w *Worker) Start(ctx context.Context) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(w.o.Poll)
		defer t.Stop()
		for {
			for {
				n, err := w.DeliverDue(ctx)
				if err != nil && ctx.Err() == nil {
					w.o.Log.Warn("Unable to send notifications", "error", err)
				}
				if n == 0 || err != nil {
					break
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-w.wake:
			}
		}
	}()
}

// Wait returns once Start's loop has ended.
func (w *Worker) Wait() { w.wg.Wait() }

// DeliverDue claims the notifications due now and sends each, recording
// the attempt; it returns how many it claimed.
func (w *Worker) DeliverDue(ctx context.Context) (int, error) {
	now := w.o.Now()
	token := store.NewDeliveryID()
	items, err := w.o.Store.ClaimOutbox(ctx, now, now.Add(w.o.Lease), token, claimBatch)
	if err != nil {
		return 0, err
	}
	errs := make([]error, len(items))
	var sends sync.WaitGroup
	slots := make(chan struct{}, sendsAtOnce)
	for i := range items {
		slots <- struct{}{}
		sends.Go(func() {
			defer func() { <-slots }()
			errs[i] = w.deliver(ctx, &items[i], token)
		})
	}
	sends.Wait()
	return len(items), errors.Join(errs...)
}

func (w *Worker) deliver(ctx context.Context, item *store.OutboxItem, token string) error {
	ch, err := w.o.Store.Channel(ctx, item.ChannelID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted with its outbox meanwhile
	}
	if err != nil {
		return err
	}
	start := time.Now()
	status, sendErr := w.send(ctx, ch, item)
	d := &store.Delivery{HTTPStatus: status, LatencyMS: time.Since(start).Milliseconds(), Error: trimError(sendErr)}
	now := w.o.Now()
	d.At = now.UnixMicro()
	var next time.Time
	switch {
	case sendErr == nil:
		d.Status = store.DeliveryDelivered
	case now.Sub(item.Created()) >= RetryWindow:
		d.Status = store.DeliveryGaveUp
	default:
		d.Status = store.DeliveryRetrying
		next = now.Add(Backoff(item.Attempts))
		if end := item.Created().Add(RetryWindow); next.After(end) {
			next = end // one last attempt at the end of the window
		}
	}
	// Recorded even when the worker is stopping: a delivery left unrecorded
	// would be sent again once its lease expires.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := w.o.Store.FinishDelivery(rctx, item, token, d, next); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			w.o.Log.Warn("A notification's lease expired while it was sent; another worker has it", "delivery", item.DeliveryID)
			return nil
		}
		return err
	}
	switch d.Status {
	case store.DeliveryRetrying:
		w.o.Log.Info("Notification not delivered; it will be tried again", "channel_id", ch.ID, "delivery", item.DeliveryID,
			"attempt", item.Attempts, "error", d.Error, "retry_at", next)
	case store.DeliveryGaveUp:
		w.o.Log.Warn("Notification given up after 24 hours", "channel_id", ch.ID, "delivery", item.DeliveryID, "error", d.Error)
	}
	return nil
}

func (w *Worker) send(ctx context.Context, ch *store.NotifyChannel, item *store.OutboxItem) (int, error) {
	switch ch.Kind {
	case store.ChannelWebhook:
		secret, err := w.o.Secrets.Open(ch.Secret)
		if err != nil {
			return 0, fmt.Errorf("the channel's secret does not open (has the secret key changed?)")
		}
		ctx, cancel := context.WithTimeout(ctx, WebhookTimeout)
		defer cancel()
		return w.o.Webhooks.Send(ctx, ch.Target, secret, item)
	case store.ChannelEmail:
		if w.o.SMTP == nil {
			return 0, errors.New("no SMTP server is configured (--smtp-url)")
		}
		return 0, w.o.SMTP.Send(ctx, strings.Split(ch.Target, ","), item)
	}
	return 0, fmt.Errorf("unknown channel kind %q", ch.Kind)
}
