package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ioc"
)

// WarninglistRefresh is how often a subscribed warninglist is fetched again.
const WarninglistRefresh = 24 * time.Hour

// MaxWarninglistBytes bounds a fetched warninglist (as feeds'
// MaxWarninglistContent bounds an imported one).
const MaxWarninglistBytes = 32 << 20

// ErrWarninglistTooLarge is returned for a list over MaxWarninglistBytes.
var ErrWarninglistTooLarge = errors.New("the warninglist is larger than 32 MiB")

// useClient sets the client subscriptions fetch through: the egress
// client of the sources (the one egress policy).
func (a *Allowlist) useClient(c *http.Client) { a.client.Store(c) }

// FetchWarninglist fetches a subscribed list from rawURL through the egress
// policy, sending etag as If-None-Match: changed is false when the server
// answers 304 Not Modified.
func (a *Allowlist) FetchWarninglist(ctx context.Context, rawURL, etag string) (content []byte, newETag string, changed bool, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", false, fmt.Errorf("not a URL: %w", err)
	}
	if err := egress.CheckURL(u); err != nil {
		return nil, "", false, err
	}
	client := a.client.Load()
	if client == nil {
		client = egress.NewClient(egress.Options{})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", false, err
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", false, ioc.HTTPRequestFailure("the warninglist", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return nil, etag, false, nil
	case resp.StatusCode != http.StatusOK:
		return nil, "", false, ioc.HTTPStatusFailure("the warninglist", resp)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxWarninglistBytes+1))
	if err != nil {
		return nil, "", false, ioc.HTTPRequestFailure("the warninglist", err)
	}
	if len(body) > MaxWarninglistBytes {
		return nil, "", false, ErrWarninglistTooLarge
	}
	return body, resp.Header.Get("ETag"), true, nil
}

// RefreshWarninglists fetches the subscribed lists fetched last longer than
// WarninglistRefresh ago (all of them with force), stores what changed and
// puts it in force here and on the other instances; a list that turned
// invalid keeps its last content. A list that drops has what it now
// matches removed.
func (a *Allowlist) RefreshWarninglists(ctx context.Context, force bool) error {
	rows, err := a.st.Warninglists(ctx, false)
	if err != nil {
		return err
	}
	changed := false
	var errs []error
	for _, l := range rows {
		if l.Builtin || l.URL == "" || !force && l.FetchedAt != nil && time.Since(*l.FetchedAt) < WarninglistRefresh {
			continue
		}
		now := time.Now()
		content, etag, fresh, err := a.FetchWarninglist(ctx, l.URL, l.ETag)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", l.Name, err))
			continue
		}
		if !fresh {
			if err := a.st.TouchWarninglistFetch(ctx, l.Name, now); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if _, err := allowlist.Parse(l.Name, content); err != nil {
			errs = append(errs, fmt.Errorf("%s: kept as it was: %w", l.Name, err))
			_ = a.st.TouchWarninglistFetch(ctx, l.Name, now)
			continue
		}
		if err := a.st.UpdateWarninglistContent(ctx, l.Name, content, etag, now); err != nil {
			errs = append(errs, err)
			continue
		}
		a.log.Info("Warninglist refreshed", "list", l.Name, "url", ioc.MaskURL(l.URL))
		changed = true
	}
	if changed {
		if err := a.Load(ctx); err != nil {
			errs = append(errs, err)
		}
		a.bus.PublishSignal(events.SignalAllowlist)
		for _, l := range a.cur.Load().Lists() {
			if !l.Builtin && l.Action == allowlist.Drop {
				if err := a.st.MarkWarninglistRemoval(ctx, l.Name); err != nil {
					errs = append(errs, err)
				}
			}
		}
		a.RemovePendingInBackground(ctx)
	}
	return errors.Join(errs...)
}
