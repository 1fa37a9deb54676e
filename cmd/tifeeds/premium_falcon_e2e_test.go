package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
)

func falconRow(at time.Time, n int, typ, value string, deleted bool) []byte {
	return []byte(fmt.Sprintf(`{"_marker": "%d%08x", "id": "%s_%d", "indicator": %q, "type": %q, "deleted": %v,
		"malicious_confidence": "high", "malware_families": ["STOP"], "actors": [], "threat_types": ["Criminal"],
		"last_updated": %d}`, at.Unix(), n, typ, n, value, typ, deleted, at.Unix()))
}

// expireAfterGets ends the simulator's tokens after every n-th GET while
// armed: tokens expiring in the middle of a run.
type expireAfterGets struct {
	*vendortest.Falcon
	n, gets int
	armed   atomic.Bool
}

func (x *expireAfterGets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x.Falcon.ServeHTTP(w, r)
	if r.Method == http.MethodGet && x.armed.Load() {
		if x.gets++; x.gets%x.n == 0 {
			x.Falcon.ExpireTokens()
		}
	}
}

// TestPremiumFalconE2E: ENDPOINT_PROTECTION enabled with a client ID and
// secret reads Falcon Intelligence through the mirror: exact IoCs, a
// deleted row withdrawing, tokens expiring mid-run, a changed secret used
// from the next run, quota and cut-body failures with the spec's
// messages, and the next run resuming from the whole _marker.
func TestPremiumFalconE2E(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			at := time.Now().Add(-time.Hour)
			fa := &vendortest.Falcon{ClientID: "e2e-client", Secret: "e2e-secret-0123456789", PageSize: 2, Indicators: [][]byte{
				falconRow(at, 1, "ip_address", "203.0.113.7", false),
				falconRow(at, 2, "domain", "c2.example.com", false),
				falconRow(at, 3, "url", "http://c2.example.com/gate.php", false),
				falconRow(at, 4, "hash_md5", "E52FAEF955F651DA029A4EE4FA227C0F", false),
				falconRow(at, 5, "email_address", "actor@example.com", false),
				falconRow(at.AddDate(0, 0, -20), 6, "ip_address", "192.0.2.66", false), // before the backfill
			}}
			h := &expireAfterGets{Falcon: fa, n: 2}
			srv := vendortest.New(t)
			srv.Handle("api.crowdstrike.com", h)
			e := premiumVendorE2E{startBuiltinE2E(t, dsn(t), srv, nil), "ENDPOINT_PROTECTION"}

			f := e.configure(map[string]any{"clientId": fa.ClientID, "clientSecret": fa.Secret, "backfillDays": 7})
			want := []string{"203.0.113.7", "c2.example.com", "e52faef955f651da029a4ee4fa227c0f", "http://c2.example.com/gate.php"}
			if got := e.values(f.ID); f.Status != "SUCCESS" || !slices.Equal(got, want) {
				t.Fatalf("first run: %s/%s %+v, IoCs %q; want %q", f.Status, f.StatusMessage, f.LastRun, got, want)
			}
			for _, i := range e.iocs(f.ID) {
				if i.Score != 80 || !slices.Equal(i.Tags, []string{"criminal", "stop"}) {
					t.Errorf("mapping: %+v", i)
				}
			}
			if fa.Issued() != 1 {
				t.Errorf("%d tokens in the first run", fa.Issued())
			}

			// A deletion and a new row, with tokens expiring every two pages.
			h.armed.Store(true)
			later := time.Now().Add(-time.Minute)
			fa.Indicators = append(fa.Indicators,
				falconRow(later, 7, "ip_address", "203.0.113.7", true),
				falconRow(later, 8, "domain", "new.example.org", false),
				falconRow(later, 9, "domain", "third.example.org", false))
			tokens := fa.Issued()
			f = e.runNow()
			h.armed.Store(false)
			want = []string{"c2.example.com", "e52faef955f651da029a4ee4fa227c0f", "http://c2.example.com/gate.php", "new.example.org", "third.example.org"}
			if got := e.values(f.ID); f.Status != "SUCCESS" || !slices.Equal(got, want) {
				t.Fatalf("second run: %s %+v, IoCs %q; want %q", f.Status, f.LastRun, got, want)
			}
			if n := fa.Issued() - tokens; n < 2 {
				t.Errorf("%d tokens in a run whose token expired, want a new one", n)
			}

			// The vendor's secret changes: refused until the feed has it,
			// then used from the next run.
			fa.Secret = "rotated-secret-987654"
			f = e.runNow()
			if f.StatusMessage != "Invalid Credentials" || strings.Contains(f.LastRun.ErrorDetail, "e2e-secret") {
				t.Errorf("old secret: %s %+v", f.StatusMessage, f.LastRun)
			}
			fa.Indicators = append(fa.Indicators, falconRow(time.Now(), 10, "ip_address", "198.51.100.10", false))
			// Saving the corrected secret runs the feed at once: no Run now needed.
			f = e.update(map[string]any{"clientSecret": fa.Secret})
			if got := e.values(f.ID); f.Status != "SUCCESS" || !slices.Contains(got, "198.51.100.10") {
				t.Errorf("new secret: %s %+v, %q", f.Status, f.LastRun, got)
			}

			// A quota error that persists; a body cut on the second page.
			fa.FailStatus, fa.RetryAfter = 429, "0"
			f = e.runNow()
			if f.StatusMessage != "Surpassed Query Limit" || f.LastRun.ErrorKind != "Surpassed Query Limit" {
				t.Errorf("quota: %s %+v", f.StatusMessage, f.LastRun)
			}
			fa.FailStatus = 0
			now := time.Now()
			for n := 11; n <= 14; n++ {
				fa.Indicators = append(fa.Indicators, falconRow(now, n, "ip_address", fmt.Sprintf("198.51.100.%d", n), false))
			}
			fa.CutPage = fa.Gets() + 2 // the second page of the next run
			f = e.runNow()
			if f.StatusMessage != "Connection Error" {
				t.Errorf("cut body: %s %+v", f.StatusMessage, f.LastRun)
			}
			fa.CutPage = 0
			f = e.runNow()
			got := e.values(f.ID)
			for n := 11; n <= 14; n++ {
				if !slices.Contains(got, fmt.Sprintf("198.51.100.%d", n)) {
					t.Errorf("after the cut: %s, %q lacks 198.51.100.%d", f.Status, got, n)
				}
			}
		})
	}
}
