package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// seedConfiguredFeed stores a feed whose configuration carries secrets
// (a query token, a username, a cursor) and one IoC sighted through it.
func seedConfiguredFeed(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	f := &store.Feed{Name: "TAXII_acme", Type: store.FeedCustom, Category: "TAXII", Enabled: true,
		StatusMessage: "Fetching Data Error", PollingFrequency: 4, RetentionPeriod: 30,
		CollectionURL: "https://taxii.example/c/?token=SECRET-TOKEN", Username: "SECRET-USER",
		Cursor: "SECRET-CURSOR", Description: "SECRET-DESCRIPTION", CreatedAt: now, UpdatedAt: now}
	if _, err := st.DB.NewInsert().Model(f).Returning("id").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := st.ApplyBatch(ctx, store.Batch{FeedID: f.ID, Retention: 24 * time.Hour, Now: now,
		Indicators: []ioc.Indicator{{Kind: ioc.IP, Value: "203.0.113.9", Source: "botnet_x", Score: 80}}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFeedConfigurationHiddenFromTenants reads the feed of a sighting by
// every path that reaches one: to a tenant-scoped user a feed is its id,
// name and type, any other field is FORBIDDEN; root reads it all.
func TestFeedConfigurationHiddenFromTenants(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		seedConfiguredFeed(t, st)
		r := f.graphql("admin", adminKey, `{ iocs { nodes { id } } }`)
		var ids struct {
			Data struct {
				Iocs struct{ Nodes []struct{ ID string } }
			}
		}
		if err := json.Unmarshal(r.body, &ids); err != nil || len(ids.Data.Iocs.Nodes) != 1 {
			t.Fatalf("iocs: %s", r.body)
		}
		iocID := ids.Data.Iocs.Nodes[0].ID

		// Each path wraps a selection of a sighting's feed in an operation.
		paths := map[string]func(feed string) string{
			"iocs": func(feed string) string { return `{ iocs { nodes { sources { feed ` + feed + ` } } } }` },
			"ioc":  func(feed string) string { return `{ ioc(id: "` + iocID + `") { sources { feed ` + feed + ` } } }` },
			"lookupIocs": func(feed string) string {
				return `{ lookupIocs(values: ["203.0.113.9"]) { ioc { sources { feed ` + feed + ` } } } }`
			},
		}
		transports := map[string]func(user, key, query string) string{
			"http": func(user, key, query string) string { return string(f.graphql(user, key, query).body) },
			"websocket": func(user, key, query string) string {
				c := f.dialWS(nil)
				c.init(map[string]any{"username": user, "apiKey": key})
				c.subscribe("1", query)
				m, err := c.read(5 * time.Second)
				if err != nil {
					t.Fatalf("websocket answer: %v", err)
				}
				return string(m.Payload)
			},
		}
		secrets := []string{"SECRET-TOKEN", "SECRET-USER", "SECRET-CURSOR", "SECRET-DESCRIPTION", "Fetching Data Error"}
		for pathName, op := range paths {
			for trName, do := range transports {
				t.Run(pathName+" over "+trName, func(t *testing.T) {
					body := do("analyst", f.tenantKey, op(`{ id name type }`))
					if !strings.Contains(body, `"name":"TAXII_acme"`) || !strings.Contains(body, `"type":"CUSTOM"`) ||
						strings.Contains(body, `"errors"`) {
						t.Errorf("tenant reading id, name, type: %s", body)
					}
					for _, field := range []string{"collectionUrl", "username", "cursor", "description",
						"statusMessage", "lastRun { errorDetail }", "iocCount", "canEdit"} {
						body := do("analyst", f.tenantKey, op(`{ name `+field+` }`))
						if !strings.Contains(body, "FORBIDDEN") {
							t.Errorf("tenant reading %s: %s, want FORBIDDEN", field, body)
						}
						for _, s := range secrets {
							if strings.Contains(body, s) {
								t.Errorf("tenant reading %s got %q: %s", field, s, body)
							}
						}
					}
					body = do("admin", adminKey, op(`{ collectionUrl username cursor statusMessage }`))
					if !strings.Contains(body, "SECRET-TOKEN") || !strings.Contains(body, "SECRET-CURSOR") ||
						strings.Contains(body, `"errors"`) {
						t.Errorf("root reading the configuration: %s", body)
					}
				})
			}
		}
		t.Run("csv export", func(t *testing.T) {
			for _, user := range []struct{ name, key string }{{"analyst", f.tenantKey}, {"admin", adminKey}} {
				r := f.do("GET", "/api/export/iocs.csv?columns=value,sources", user.name, user.key, "", nil)
				got := readCSV(t, r.body)
				if r.status != 200 || len(got) != 2 || got[1][1] != "TAXII_acme/botnet_x" {
					t.Errorf("%s: %d %q, want the sources cell to name the feed and the source only", user.name, r.status, got)
				}
			}
		})
	})
}
