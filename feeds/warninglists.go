package feeds

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// Bounds of the own warninglists.
const (
	MaxWarninglists       = 50
	MaxWarninglistContent = 32 << 20 // bytes of one list as imported or fetched
)

// WarninglistStore is what the warninglist changes need of the store.
type WarninglistStore interface {
	Warninglists(ctx context.Context, withContent bool) ([]store.Warninglist, error)
	SetBuiltinWarninglistAction(ctx context.Context, name, action string) error
	SetOwnWarninglistAction(ctx context.Context, name, action string) error
	AddWarninglist(ctx context.Context, w *store.Warninglist, max int) error
	DeleteWarninglist(ctx context.Context, name string) (*store.Warninglist, error)
}

// WarninglistsInForce is the warninglists ingestion applies on this
// instance (ingest.Allowlist).
type WarninglistsInForce interface {
	Set() *allowlist.Set
	// RemoveListInBackground starts removing the stored IoCs the list
	// matches (it drops now; its removal is pending) and returns at once.
	RemoveListInBackground(ctx context.Context, name string)
	// FetchWarninglist fetches a subscribed list through the egress policy.
	FetchWarninglist(ctx context.Context, rawURL, etag string) (content []byte, newETag string, changed bool, err error)
}

// WarninglistState is a list in force with the settings of its row.
type WarninglistState struct {
	allowlist.ListState
	URL string
	// Removing is true while what the list matches is being removed in
	// the background (its row's removal is pending).
	Removing bool
}

// Warninglists returns every list in force with its action, built-in ones
// first.
func (a *Allowlist) Warninglists(ctx context.Context) ([]WarninglistState, error) {
	rows, err := a.st.Warninglists(ctx, false)
	if err != nil {
		return nil, err
	}
	byName := map[string]store.Warninglist{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	var out []WarninglistState
	for _, l := range a.inForce.Set().Lists() {
		r := byName[l.Name]
		out = append(out, WarninglistState{ListState: l, URL: r.URL, Removing: r.RemovalPending})
	}
	return out, nil
}

func parseAction(action string) (allowlist.Action, error) {
	act, ok := allowlist.ParseAction(strings.ToLower(action))
	if !ok {
		return "", store.Invalid("action", "drop, flag or off, got %q", action)
	}
	return act, nil
}

// SetWarninglistAction changes a list's action, here and on the other
// instances: flag and off take effect with the reload (warnings are read
// from the lists in force); drop also has the stored IoCs the list matches
// removed in the background (the list's row says so until it finished):
// a list of millions of entries is not scanned within the request.
func (a *Allowlist) SetWarninglistAction(ctx context.Context, name, action string) error {
	act, err := parseAction(action)
	if err != nil {
		return err
	}
	var found *allowlist.ListState
	for _, l := range a.inForce.Set().Lists() {
		if l.Name == name {
			found = &l
			break
		}
	}
	if found == nil {
		return store.ErrNotFound
	}
	if found.Builtin {
		err = a.st.SetBuiltinWarninglistAction(ctx, name, string(act))
	} else {
		err = a.st.SetOwnWarninglistAction(ctx, name, string(act))
	}
	if err != nil {
		return err
	}
	a.audit.Record(ctx, audit.WarninglistAction, warninglistTarget(name), map[string]any{"from": string(found.Action), "to": string(act)})
	a.applied(ctx, name, act)
	return nil
}

// applied puts a change of the lists in force here and on the other
// instances, and starts removing in the background what a dropping list
// matches (the store marked that removal pending with the action).
//
// A reload that fails is logged, not returned: the change is stored and
// announced, and every instance reads it again at its next refresh.
func (a *Allowlist) applied(ctx context.Context, name string, act allowlist.Action) {
	if err := a.inForce.Load(ctx); err != nil {
		a.log.Warn("Unable to reload the warninglists", "error", err)
	}
	a.bus.PublishSignal(events.SignalAllowlist)
	if act == allowlist.Drop {
		a.inForce.RemoveListInBackground(ctx, name)
	}
}

// ImportWarninglist stores an own list (MISP warninglist JSON or plain
// text, see allowlist.Parse) with its action and puts it in force.
func (a *Allowlist) ImportWarninglist(ctx context.Context, name string, content []byte, action string) (*allowlist.Parsed, error) {
	return a.importList(ctx, name, content, action, "", "")
}

// MaxWarninglistURL bounds a subscription's URL.
const MaxWarninglistURL = 2048

// SubscribeWarninglist fetches a list from rawURL through the egress
// policy and stores it as ImportWarninglist does, with its URL and ETag:
// ingestion fetches it again daily (ingest.WarninglistRefresh), sending
// the ETag, and replaces it when it changed.
func (a *Allowlist) SubscribeWarninglist(ctx context.Context, name, rawURL, action string) (*allowlist.Parsed, error) {
	if _, err := parseAction(action); err != nil {
		return nil, err
	}
	if err := allowlist.CheckName(name); err != nil {
		return nil, store.Invalid("name", "%s", strings.TrimPrefix(err.Error(), allowlist.ErrInvalidList.Error()+": "))
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || len(rawURL) > MaxWarninglistURL || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, store.Invalid("url", "an http or https URL of at most %d bytes", MaxWarninglistURL)
	}
	if u.User != nil {
		return nil, store.Invalid("url", "the URL carries user information")
	}
	content, etag, _, err := a.inForce.FetchWarninglist(ctx, u.String(), "")
	if err != nil {
		return nil, store.Invalid("url", "unable to fetch the list: %s", ioc.MaskURLs(err.Error()))
	}
	return a.importList(ctx, name, content, action, u.String(), etag)
}

func (a *Allowlist) importList(ctx context.Context, name string, content []byte, action, url, etag string) (*allowlist.Parsed, error) {
	act, err := parseAction(action)
	if err != nil {
		return nil, err
	}
	if len(content) > MaxWarninglistContent {
		return nil, store.Invalid("content", "at most %d bytes, got %d", MaxWarninglistContent, len(content))
	}
	for _, l := range allowlist.Builtin() {
		if l.Name == name || name == allowlist.ListUser {
			return nil, store.Invalid("name", "%q names a built-in list", name)
		}
	}
	p, err := allowlist.Parse(name, content)
	if err != nil {
		field := "content"
		if allowlist.CheckName(name) != nil {
			field = "name"
		}
		return nil, store.Invalid(field, "%s", strings.TrimPrefix(err.Error(), allowlist.ErrInvalidList.Error()+": "))
	}
	w := &store.Warninglist{Name: name, Action: string(act), Content: content, URL: url, ETag: etag}
	if url != "" {
		now := time.Now().UTC()
		w.FetchedAt = &now
	}
	if err := a.st.AddWarninglist(ctx, w, MaxWarninglists); err != nil {
		if errors.Is(err, store.ErrWarninglistsFull) {
			return nil, store.Invalid("name", "at most %d lists of your own", MaxWarninglists)
		}
		if errors.Is(err, store.ErrConflict) {
			return nil, store.Invalid("name", "a list is named %q already", name)
		}
		return nil, err
	}
	a.audit.Record(ctx, audit.WarninglistImport, warninglistTarget(name), map[string]any{"action": string(act),
		"entries": p.List.Entries, "type": p.List.Type, "url": ioc.MaskURL(url)})
	a.applied(ctx, name, act)
	return p, nil
}

// DeleteWarninglist deletes an own list: what it dropped is stored again by
// later runs, what it flagged is no longer flagged.
func (a *Allowlist) DeleteWarninglist(ctx context.Context, name string) error {
	if _, err := a.st.DeleteWarninglist(ctx, name); err != nil {
		return err
	}
	a.audit.Record(ctx, audit.WarninglistDelete, warninglistTarget(name), nil)
	a.applied(ctx, name, allowlist.Off)
	return nil
}

func warninglistTarget(name string) audit.Target {
	return audit.Target{Type: audit.TargetWarninglist, ID: name, Name: name}
}
