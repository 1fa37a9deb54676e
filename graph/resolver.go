// Package graph is the GraphQL API: gqlgen's generated code and thin
// resolvers that call the domain packages.
package graph

import (
	"context"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/store"
)

// Ingestion is what the resolvers read of the feed runner (ingest.Runner):
// the next and current runs, the keys built-in kinds lack, and the
// allowlist in force.
type Ingestion interface {
	NextRun(feedID int64) (time.Time, bool)
	Running(feedID int64) bool
	MissingKey(k builtin.Kind) string
	allowlist.Matcher
	// Warninglists is the allowlist and warninglists in force.
	Warninglists() *allowlist.Set
}

// Resolver is the root of the resolvers; everything they need is a field.
type Resolver struct {
	// Store is what the resolvers read and write of the store, through the
	// small interfaces graph declares per noun.
	Store Store
	// Events carries feed changes and run progress to subscriptions.
	Events *events.Bus
	// Ingest runs the feeds: their next runs, the runs going on, the
	// allowlist in force.
	Ingest Ingestion
	// Feeds carries out the feed mutations.
	Feeds *feeds.Service
	// SaaS is the managed edition, where tenants may not use retention groups.
	SaaS bool
	// Notify is the notification services: channels, the asset watch,
	// the feed health watch (package notify).
	Notify Notifications
	// Audit records the changes the resolvers make; nil records none.
	// The server's REST handlers record through it too.
	Audit *audit.Log
	// MFA makes and checks TOTP codes (sign-in, enrolment); nil: no user
	// can enrol, and a user who needs MFA cannot sign in with a password.
	MFA *auth.MFA

	// passwordTries counts wrong current passwords given to changePassword.
	passwordTries tries
}

// Store is the store as the resolvers see it: the union of each noun's
// interface, declared beside that noun's resolvers. One field keeps the
// composition root (serve, the tests) a single assignment; the compiler
// checks *store.Store against every noun below.
type Store interface {
	FeedStore
	IoCStore
	TenantStore
	UserStore
	ViewStore
	OverviewStore
	AuditStore
}

var _ Store = (*store.Store)(nil)

// OverviewStore is what the Overview page's resolver reads of the store.
type OverviewStore interface {
	Overview(ctx context.Context, now time.Time) (*store.Overview, error)
}

// pointersTo gives gqlgen the pointers its list fields take, into s itself,
// or err.
func pointersTo[T any](s []T, err error) ([]*T, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out, nil
}

// modelsOf turns stored rows into their GraphQL models, one by one.
func modelsOf[T, M any](rows []T, model func(*T) *M) []*M {
	out := make([]*M, len(rows))
	for i := range rows {
		out[i] = model(&rows[i])
	}
	return out
}
