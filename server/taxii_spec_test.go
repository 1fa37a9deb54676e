package server_test

// A TAXII 2.1 client suite written from the specification (OASIS TAXII
// 2.1, sections 1.6.8 media types, 3.3 headers, 3.4 pagination, 3.5
// filtering, 3.6 errors, 4 discovery and API root, 5 collections), not from
// the server's code: what a conforming server must answer.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

const taxiiMedia = "application/taxii+json;version=2.1"

type taxiiEnvelope struct {
	More    *bool            `json:"more"`
	Next    string           `json:"next"`
	Objects []map[string]any `json:"objects"`
}

type taxiiErr struct {
	Title      string `json:"title"`
	HTTPStatus string `json:"http_status"`
}

// taxii is GET path as a TAXII client: with the 2.1 Accept header.
func (f *fixture) taxii(path, user, key string) response {
	f.t.Helper()
	return f.do("GET", path, user, key, "", map[string]string{"Accept": taxiiMedia})
}

func (f *fixture) taxiiJSON(path string, v any) response {
	f.t.Helper()
	r := f.taxii(path, "admin", adminKey)
	if r.status != 200 {
		f.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	if ct := strings.ReplaceAll(r.header.Get("Content-Type"), " ", ""); ct != taxiiMedia {
		f.t.Errorf("GET %s: Content-Type %q, want %s", path, ct, taxiiMedia)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		f.t.Fatalf("GET %s: %v\n%s", path, err, r.body)
	}
	return r
}

// wantTAXIIError checks an error answer: the status and an error message
// whose http_status says it (section 3.6.1).
func wantTAXIIError(t *testing.T, what string, r response, status int) {
	t.Helper()
	var e taxiiErr
	if r.status != status {
		t.Errorf("%s: status %d, want %d (%s)", what, r.status, status, r.body)
		return
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Title == "" || e.HTTPStatus != fmt.Sprint(status) {
		t.Errorf("%s: error body %s (%v)", what, r.body, err)
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/taxii+json") {
		t.Errorf("%s: error Content-Type %q", what, r.header.Get("Content-Type"))
	}
}

// collectionsOf discovers the API root and its collections, by title.
func collectionsOf(f *fixture) (root string, byTitle map[string]string) {
	var disc struct {
		Title    string   `json:"title"`
		Default  string   `json:"default"`
		APIRoots []string `json:"api_roots"`
	}
	f.taxiiJSON("/taxii2/", &disc)
	if disc.Title == "" || len(disc.APIRoots) != 1 {
		f.t.Fatalf("discovery: %+v", disc)
	}
	u, err := url.Parse(disc.APIRoots[0])
	if err != nil || !strings.HasSuffix(u.Path, "/") {
		f.t.Fatalf("api root %q", disc.APIRoots[0])
	}
	root = u.Path
	var ar struct {
		Title            string   `json:"title"`
		Versions         []string `json:"versions"`
		MaxContentLength int64    `json:"max_content_length"`
	}
	f.taxiiJSON(root, &ar)
	if ar.Title == "" || len(ar.Versions) == 0 || ar.Versions[0] != taxiiMedia || ar.MaxContentLength <= 0 {
		f.t.Fatalf("api root: %+v", ar)
	}
	var cols struct {
		Collections []struct {
			ID         string   `json:"id"`
			Title      string   `json:"title"`
			CanRead    *bool    `json:"can_read"`
			CanWrite   *bool    `json:"can_write"`
			MediaTypes []string `json:"media_types"`
		} `json:"collections"`
	}
	f.taxiiJSON(root+"collections/", &cols)
	byTitle = map[string]string{}
	for _, c := range cols.Collections {
		if c.ID == "" || c.CanRead == nil || !*c.CanRead || c.CanWrite == nil || *c.CanWrite ||
			len(c.MediaTypes) != 1 || c.MediaTypes[0] != "application/stix+json;version=2.1" {
			f.t.Errorf("collection %+v", c)
		}
		var one struct {
			ID string `json:"id"`
		}
		f.taxiiJSON(root+"collections/"+c.ID+"/", &one)
		if one.ID != c.ID {
			f.t.Errorf("collection %s answers as %s", c.ID, one.ID)
		}
		byTitle[c.Title] = c.ID
	}
	return root, byTitle
}

func seedTAXII(t *testing.T, st *store.Store, feed int64, prefix string, n int) {
	t.Helper()
	inds := make([]ioc.Indicator, n)
	for i := range inds {
		inds[i] = ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("%s%d.example", prefix, i), Score: 50}
	}
	if _, err := st.ApplyBatch(context.Background(), store.Batch{FeedID: feed, Retention: 24 * time.Hour, Now: time.Now(), Indicators: inds}); err != nil {
		t.Fatal(err)
	}
}

func TestTAXIIDiscoveryCollectionsAndErrors(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		root, cols := collectionsOf(f)
		if len(cols) != 1+len(ioc.Kinds) || cols["tifeeds: All indicators"] == "" || cols["tifeeds: IP address indicators"] == "" {
			t.Fatalf("collections: %v", cols)
		}
		all := root + "collections/" + cols["tifeeds: All indicators"] + "/"

		wantTAXIIError(t, "unknown collection", f.taxii(root+"collections/00000000-0000-0000-0000-000000000000/objects/", "admin", adminKey), 404)
		wantTAXIIError(t, "unknown API root", f.taxii("/taxii2/nope/", "admin", adminKey), 404)
		wantTAXIIError(t, "unknown object", f.taxii(all+"objects/indicator--00000000-0000-0000-0000-000000000000/", "admin", adminKey), 404)
		wantTAXIIError(t, "bad limit", f.taxii(all+"objects/?limit=0", "admin", adminKey), 400)
		wantTAXIIError(t, "bad added_after", f.taxii(all+"objects/?added_after=yesterday", "admin", adminKey), 400)

		// Credentials: basic auth with API keys (section 1.6.6).
		r := f.taxii(all+"objects/", "", "")
		wantTAXIIError(t, "no credentials", r, 401)
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("401 without a Basic challenge: %v", r.header)
		}
		wantTAXIIError(t, "wrong key", f.taxii("/taxii2/", "admin", "not-the-key"), 401)
		wantTAXIIError(t, "unknown user", f.taxii("/taxii2/", "nobody", adminKey), 401)

		// Media types (section 1.6.8): 406 on an Accept without TAXII 2.1,
		// 415 on a body that is not TAXII.
		for _, accept := range []string{"application/json", "application/taxii+json;version=2.0", "text/html", "application/stix+json;version=2.1"} {
			wantTAXIIError(t, "Accept "+accept, f.do("GET", all+"objects/", "admin", adminKey, "", map[string]string{"Accept": accept}), 406)
		}
		for _, accept := range []string{"application/taxii+json", taxiiMedia, "application/taxii+json; version=2.1", "*/*"} {
			if r := f.do("GET", all+"objects/", "admin", adminKey, "", map[string]string{"Accept": accept}); r.status != 200 {
				t.Errorf("Accept %s: %d", accept, r.status)
			}
		}
		wantTAXIIError(t, "POST JSON", f.do("POST", all+"objects/", "admin", adminKey, `{"objects":[]}`, map[string]string{"Accept": taxiiMedia}), 415)
		r = f.do("POST", all+"objects/", "admin", adminKey, `{"objects":[]}`, map[string]string{"Accept": taxiiMedia, "Content-Type": taxiiMedia})
		if r.status < 400 || r.status == 415 {
			t.Errorf("POST to a read-only collection: %d", r.status)
		}
	})
}

// A tenant-scoped user reads the same collections as root (IoCs are not
// bound to tenants); once its tenant is deleted, its key is refused.
func TestTAXIITenantScope(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		seedTAXII(t, st, seedExport(t, st, 2), "t", 3)
		root, cols := collectionsOf(f)
		path := root + "collections/" + cols["tifeeds: All indicators"] + "/objects/"
		admin, tenant := f.taxii(path, "admin", adminKey), f.taxii(path, "analyst", f.tenantKey)
		var a, b taxiiEnvelope
		_ = json.Unmarshal(admin.body, &a)
		_ = json.Unmarshal(tenant.body, &b)
		if tenant.status != 200 || len(a.Objects) != 6 || len(b.Objects) != len(a.Objects) {
			t.Fatalf("tenant %d with %d objects, admin %d", tenant.status, len(b.Objects), len(a.Objects))
		}
		if r := f.do("DELETE", "/connect/api/v1/tenants/"+f.tenantID, "admin", adminKey, "", nil); r.status != 200 {
			t.Fatalf("delete tenant: %d %s", r.status, r.body)
		}
		wantTAXIIError(t, "user of a deleted tenant", f.taxii(path, "analyst", f.tenantKey), 401)
	})
}

// walk pages a collection with next until more is false, calling between
// after each page; it returns the objects in order and checks the headers.
func walk(f *fixture, path string, limit int, between func(page int)) []map[string]any {
	f.t.Helper()
	var out []map[string]any
	next := ""
	prevLast := ""
	for page := 0; ; page++ {
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		if next != "" {
			q.Set("next", next)
		}
		var env taxiiEnvelope
		r := f.taxiiJSON(path+"?"+q.Encode(), &env)
		if env.More == nil {
			f.t.Fatalf("page %d: no more", page)
		}
		if len(env.Objects) > limit {
			f.t.Fatalf("page %d: %d objects over limit %d", page, len(env.Objects), limit)
		}
		first, last := r.header.Get("X-TAXII-Date-Added-First"), r.header.Get("X-TAXII-Date-Added-Last")
		if len(env.Objects) > 0 {
			ft, err1 := time.Parse(time.RFC3339Nano, first)
			lt, err2 := time.Parse(time.RFC3339Nano, last)
			if err1 != nil || err2 != nil || lt.Before(ft) {
				f.t.Fatalf("page %d: date added headers %q %q", page, first, last)
			}
			if prevLast != "" && last < prevLast {
				f.t.Fatalf("page %d: X-TAXII-Date-Added-Last went back from %s to %s", page, prevLast, last)
			}
			prevLast = last
		}
		out = append(out, env.Objects...)
		if !*env.More {
			return out
		}
		if env.Next == "" {
			f.t.Fatalf("page %d: more without next", page)
		}
		next = env.Next
		if between != nil {
			between(page)
		}
	}
}

// Paging along next while indicators are added and changed loses none and
// repeats no version (section 3.4).
func TestTAXIIPagingWhileIngesting(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		feed := seedExport(t, st, 0)
		seedTAXII(t, st, feed, "a", 250)
		seedTAXII(t, st, feed, "b", 120)
		root, cols := collectionsOf(f)
		path := root + "collections/" + cols["tifeeds: All indicators"] + "/objects/"
		objs := walk(f, path, 100, func(page int) {
			// New IoCs, and a change of one already read: it comes again,
			// as its new version.
			seedTAXII(t, st, feed, fmt.Sprintf("p%d-", page), 30)
			if _, err := st.ApplyBatch(context.Background(), store.Batch{FeedID: feed, Retention: 24 * time.Hour, Now: time.Now(),
				Indicators: []ioc.Indicator{{Kind: ioc.Domain, Value: "a0.example", Score: 10 + page}}}); err != nil {
				t.Fatal(err)
			}
		})
		seen := map[string]bool{}
		ids := map[string]bool{}
		for _, o := range objs {
			k := o["id"].(string) + "@" + o["modified"].(string)
			if seen[k] {
				t.Fatalf("%s served twice", k)
			}
			seen[k] = true
			ids[o["id"].(string)] = true
		}
		// Every IoC stored at the end was served, in its last version.
		var want []map[string]any
		for _, o := range walk(f, path, 10000, nil) {
			want = append(want, o)
			if !seen[o["id"].(string)+"@"+o["modified"].(string)] {
				t.Errorf("%s (%s) was never served", o["id"], o["pattern"])
			}
		}
		if len(ids) != len(want) || len(want) < 1+370 {
			t.Errorf("walk served %d distinct objects, the store has %d", len(ids), len(want))
		}
	})
}

// Every filter of section 3.5, added_after, limit, and the manifest,
// object and versions endpoints.
func TestTAXIIFilters(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		feed := seedExport(t, st, 3) // 3 IPs and a domain
		seedTAXII(t, st, feed, "later", 4)
		root, cols := collectionsOf(f)
		all := root + "collections/" + cols["tifeeds: All indicators"] + "/"
		ips := root + "collections/" + cols["tifeeds: IP address indicators"] + "/"

		var env taxiiEnvelope
		f.taxiiJSON(all+"objects/", &env)
		if len(env.Objects) != 8 || *env.More {
			t.Fatalf("all: %d objects, more %v", len(env.Objects), *env.More)
		}
		f.taxiiJSON(ips+"objects/", &env)
		if len(env.Objects) != 3 {
			t.Fatalf("IP collection: %d objects", len(env.Objects))
		}
		for _, o := range env.Objects {
			if !strings.HasPrefix(o["pattern"].(string), "[ipv4-addr:value = ") {
				t.Errorf("IP collection serves %s", o["pattern"])
			}
		}
		count := func(path string) int {
			var e taxiiEnvelope
			f.taxiiJSON(path, &e)
			return len(e.Objects)
		}
		f.taxiiJSON(all+"objects/", &env)
		id0, id1 := env.Objects[0]["id"].(string), env.Objects[5]["id"].(string)
		for q, want := range map[string]int{
			"match[type]=indicator":                                 8,
			"match[type]=malware,indicator":                         8,
			"match[type]=malware":                                   0,
			"match[spec_version]=2.1":                               8,
			"match[spec_version]=2.0":                               0,
			"match[id]=" + id0:                                      1,
			"match[id]=" + id0 + "," + id1:                          2,
			"match[id]=indicator--nope":                             0,
			"match[version]=last":                                   8,
			"match[version]=first":                                  8,
			"match[version]=all":                                    8,
			"match[version]=" + env.Objects[0]["modified"].(string): 1, // each IoC has a stamp of its own
			"match[version]=2001-01-01T00:00:00Z":                   0,
			"limit=3":                                               3,
			"limit=1000000":                                         8,
			"match[id]=" + id0 + "&match[type]=malware":             0,
		} {
			if got := count(all + "objects/?" + strings.ReplaceAll(q, "+", "%2B")); got != want {
				t.Errorf("%s: %d objects, want %d", q, got, want)
			}
		}
		// added_after: strictly after, by date added.
		r := f.taxii(all+"objects/?limit=4", "admin", adminKey)
		last := r.header.Get("X-TAXII-Date-Added-Last")
		if got := count(all + "objects/?added_after=" + url.QueryEscape(last)); got != 4 {
			t.Errorf("added_after the first page's last: %d objects, want 4", got)
		}
		if got := count(all + "objects/?added_after=2000-01-01T00:00:00Z"); got != 8 {
			t.Errorf("added_after long ago: %d", got)
		}
		if got := count(all + "objects/?added_after=2999-01-01T00:00:00Z"); got != 0 {
			t.Errorf("added_after the future: %d", got)
		}

		// Manifest: one record per object, in the same order and versions.
		var man struct {
			More    bool `json:"more"`
			Objects []struct {
				ID        string `json:"id"`
				DateAdded string `json:"date_added"`
				Version   string `json:"version"`
				MediaType string `json:"media_type"`
			} `json:"objects"`
		}
		mr := f.taxiiJSON(all+"manifest/", &man)
		if len(man.Objects) != 8 || mr.header.Get("X-TAXII-Date-Added-First") == "" {
			t.Fatalf("manifest: %+v %v", man, mr.header)
		}
		for i, m := range man.Objects {
			if m.ID != env.Objects[i]["id"] || m.Version != env.Objects[i]["modified"] || m.MediaType != "application/stix+json;version=2.1" || m.DateAdded == "" {
				t.Errorf("manifest record %d: %+v for %v", i, m, env.Objects[i]["id"])
			}
		}
		f.taxiiJSON(all+"manifest/?match[id]="+id1, &man)
		if len(man.Objects) != 1 || man.Objects[0].ID != id1 {
			t.Errorf("manifest match[id]: %+v", man)
		}

		// An object by id, and its versions.
		var one taxiiEnvelope
		f.taxiiJSON(all+"objects/"+id1+"/", &one)
		if len(one.Objects) != 1 || one.Objects[0]["id"] != id1 {
			t.Errorf("object %s: %+v", id1, one)
		}
		var vs struct {
			Versions []string `json:"versions"`
		}
		f.taxiiJSON(all+"objects/"+id1+"/versions/", &vs)
		if len(vs.Versions) != 1 || vs.Versions[0] != env.Objects[5]["modified"] {
			t.Errorf("versions of %s: %v", id1, vs)
		}
		wantTAXIIError(t, "object of another collection", f.taxii(ips+"objects/"+id1+"/", "admin", adminKey), 404)
	})
}

// Discovery names its API root from configuration, never from the request's
// Host header: a forged Host would otherwise send clients that follow the
// answer (and their credentials) to another server.
func TestTAXIIDiscoveryIgnoresHost(t *testing.T) {
	st := storetest.NewSQLite(t)
	discover := func(f *fixture) []string {
		req, err := http.NewRequest("GET", f.srv.URL+"/taxii2/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "attacker.example"
		req.SetBasicAuth("admin", adminKey)
		req.Header.Set("Accept", taxiiMedia)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		var disc struct {
			Default  string   `json:"default"`
			APIRoots []string `json:"api_roots"`
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &disc) != nil {
			t.Fatalf("discovery: %d %s", res.StatusCode, body)
		}
		if strings.Contains(string(body), "attacker.example") {
			t.Errorf("discovery echoes the forged Host: %s", body)
		}
		return append(disc.APIRoots, disc.Default)
	}
	// Without a public URL the API root is relative: the client resolves
	// it against the discovery URL it asked.
	for _, u := range discover(newFixture(t, st)) {
		if u != "/taxii2/api/" {
			t.Errorf("without --public-url: API root %q, want /taxii2/api/", u)
		}
	}
	withPublic := newFixtureWithoutTenant(t, storetest.NewSQLite(t), func(c *server.Config) { c.PublicURL = "https://ti.example.com/" })
	for _, u := range discover(withPublic) {
		if u != "https://ti.example.com/taxii2/api/" {
			t.Errorf("with --public-url: API root %q", u)
		}
	}
}

// A client may page with added_after = the last page's
// X-TAXII-Date-Added-Last instead of next (section 3.4). Over one write of
// 20,000 IoCs, far more than limit, that walk must see every object once
// and end, and the header must be the last object's date added exactly.
func TestTAXIIAddedAfterWalk(t *testing.T) {
	const n, limit = 20000, 100
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		seedTAXII(t, st, seedExport(t, st, 0), "big", n)
		root, cols := collectionsOf(f)
		col := root + "collections/" + cols["tifeeds: All indicators"] + "/"

		byNext := map[string]bool{}
		for _, o := range walk(f, col+"objects/", limit, nil) {
			byNext[o["id"].(string)] = true
		}
		if len(byNext) < n {
			t.Fatalf("the next walk served %d distinct objects, want %d and more", len(byNext), n)
		}
		for _, endpoint := range []string{"objects/", "manifest/"} {
			seen := map[string]bool{}
			after := ""
			for page := 0; ; page++ {
				if page > n/limit+10 {
					t.Fatalf("%s: no end after %d pages of added_after (at %s)", endpoint, page, after)
				}
				q := url.Values{"limit": {fmt.Sprint(limit)}}
				if after != "" {
					q.Set("added_after", after)
				}
				var env struct {
					More    *bool `json:"more"`
					Objects []struct {
						ID        string `json:"id"`
						DateAdded string `json:"date_added"`
					} `json:"objects"`
				}
				r := f.taxiiJSON(col+endpoint+"?"+q.Encode(), &env)
				if env.More == nil || len(env.Objects) > limit {
					t.Fatalf("%s page %d: more %v, %d objects", endpoint, page, env.More, len(env.Objects))
				}
				for _, o := range env.Objects {
					if seen[o.ID] {
						t.Fatalf("%s page %d: %s served again", endpoint, page, o.ID)
					}
					seen[o.ID] = true
				}
				if len(env.Objects) == 0 {
					break
				}
				first, last := r.header.Get("X-TAXII-Date-Added-First"), r.header.Get("X-TAXII-Date-Added-Last")
				if endpoint == "manifest/" {
					if want := env.Objects[0].DateAdded; first != want {
						t.Fatalf("page %d: X-TAXII-Date-Added-First %s, the first object's date added %s", page, first, want)
					}
					if want := env.Objects[len(env.Objects)-1].DateAdded; last != want {
						t.Fatalf("page %d: X-TAXII-Date-Added-Last %s, the last object's date added %s", page, last, want)
					}
				}
				after = last
				if !*env.More {
					break
				}
			}
			for id := range byNext {
				if !seen[id] {
					t.Fatalf("%s: the added_after walk served %d distinct objects and not %s; next served %d",
						endpoint, len(seen), id, len(byNext))
				}
			}
		}
	})
}
