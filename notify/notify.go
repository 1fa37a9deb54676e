// Package notify tells people what they would otherwise have to watch the
// dashboard for: a feed that fails, recovers or goes stale (FEED_HEALTH,
// to root's channels) and an ingested indicator that names one of a
// tenant's assets (ASSET_HIT, to that tenant's channels and root's).
//
// Every notification goes through the outbox in the database
// (store.Enqueue), written in the transaction of the change that causes
// it where there is one. Workers on every instance lease due rows
// (store.ClaimOutbox), send them to a signed webhook or over SMTP, and
// record the attempt in the channel's delivery log; a lease that expires
// (its worker killed) lets another worker send the row, and a failed
// attempt is retried with a growing wait for 24 hours.
//
// The package imports the store, the bus, the audit log, auth, the
// allowlist's parsing and the egress policy; ingestion reaches it only
// through the small interface the runner declares (ingest.AssetWatch).
package notify

import (
	"encoding/json"
	"time"
)

// Envelope is the JSON body of every notification.
type Envelope struct {
	// Delivery is the id in X-Tifeeds-Delivery: the same across retries.
	Delivery string    `json:"delivery"`
	Event    string    `json:"event"`
	At       time.Time `json:"at"`
	// Tenant is the tenant the event concerns; empty for root's.
	Tenant string `json:"tenant,omitempty"`
	Data   any    `json:"data"`
}

func envelope(event, tenant string, at time.Time, data any) func(string) ([]byte, error) {
	return func(id string) ([]byte, error) {
		return json.Marshal(Envelope{Delivery: id, Event: event, At: at.UTC(), Tenant: tenant, Data: data})
	}
}
