package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// builtinE2E is `tifeeds serve` running in-process with --feed-mirror
// pointing at a vendortest server: the harness of the built-in feeds'
// end-to-end tests. Each kind's test registers its vendor's handler on the
// server, starts the harness and drives its feed through GraphQL.
type builtinE2E struct {
	t      *testing.T
	base   string
	key    string
	stderr *syncBuffer
}

const e2eKey = "tifeeds_e2e_admin_key_0123456789abcdef"

// dbs are the two databases every end-to-end test runs on.
var dbs = map[string]func(t *testing.T) string{
	"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "t.db") },
	"postgres": func(t *testing.T) string { return storetest.NewPostgresDSN(t) },
}

// startBuiltinE2E starts the server on dsn with every vendor request going
// to srv, and env set besides; it stops when the test ends.
func startBuiltinE2E(t *testing.T, dsn string, srv *vendortest.Server, env map[string]string) *builtinE2E {
	t.Helper()
	t.Chdir(t.TempDir())
	withMirror := map[string]string{"TIFEEDS_FEED_MIRROR": srv.URL}
	for k, v := range env {
		withMirror[k] = v
	}
	return startServeOn(t, dsn, withMirror)
}

// gql runs a GraphQL operation as the admin; it returns the first error's
// message, or "" with data decoded into out.
func (e *builtinE2E) gql(query string, vars map[string]any, out any) string {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", e.base+"/graphql", bytes.NewReader(body))
	req.SetBasicAuth("admin", e.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var r struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		e.t.Fatal(err)
	}
	if len(r.Errors) > 0 {
		return r.Errors[0].Message
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			e.t.Fatal(err)
		}
	}
	return ""
}

type e2eRun struct {
	ID          string
	EndedAt     *time.Time
	Stored      int
	ErrorKind   string
	ErrorDetail string
	Note        string
}

type e2eFeed struct {
	ID, Name, Status, StatusMessage, BuiltinKind, Description, Icon, Needs string
	MissingSetting                                                         *string
	Enabled, CanEdit, CanDelete, CanReset                                  bool
	PollingFrequency                                                       int
	LastRun                                                                *e2eRun
}

const feedFields = `id name status statusMessage builtinKind description icon needs missingSetting enabled canEdit canDelete canReset pollingFrequency lastRun { id endedAt stored errorKind errorDetail note }`

// builtinFeeds returns the built-in feeds by kind.
func (e *builtinE2E) builtinFeeds() map[string]e2eFeed {
	e.t.Helper()
	var d struct{ Feeds struct{ Nodes []e2eFeed } }
	if msg := e.gql(`{ feeds(filter: {type: [BUILTIN]}, first: 100) { nodes { `+feedFields+` } } }`, nil, &d); msg != "" {
		e.t.Fatal(msg)
	}
	out := map[string]e2eFeed{}
	for _, f := range d.Feeds.Nodes {
		out[f.BuiltinKind] = f
	}
	return out
}

// feed returns the built-in feed of kind.
func (e *builtinE2E) feed(kind string) e2eFeed {
	e.t.Helper()
	f, ok := e.builtinFeeds()[kind]
	if !ok {
		e.t.Fatalf("no %s built-in feed", kind)
	}
	return f
}

// waitRun waits until the feed of kind has a finished run other than
// after (a run id, "" for none) and returns the feed then.
func (e *builtinE2E) waitRun(kind, after string) e2eFeed {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		f := e.feed(kind)
		if f.LastRun != nil && f.LastRun.ID != after && f.LastRun.EndedAt != nil {
			// Read again: the feed's row may have been read before the
			// run's end committed, and its run after.
			return e.feed(kind)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("no run of %s ended in time", kind)
	return e2eFeed{}
}

// runNow runs the feed of kind and returns it once the run ended.
func (e *builtinE2E) runNow(kind string) e2eFeed {
	e.t.Helper()
	before := e.feed(kind)
	return e.waitRun(kind, e.askRun(before.ID, before.LastRun))
}

// askRun asks for a run of the feed whose last run is last, unless that
// one is still going on (an update of the connection settings starts a
// run), and returns the run id to wait past: the last ended run, "" while
// the one in flight is the one to wait for. A run that starts between the
// read of last and the ask (such an update again) answers "already
// running", and is the run waited for.
func (e *builtinE2E) askRun(feedID string, last *e2eRun) (after string) {
	e.t.Helper()
	if last != nil && last.EndedAt == nil {
		return ""
	}
	msg := e.gql(`mutation($id: ID!) { runFeedNow(id: $id) { id } }`, map[string]any{"id": feedID}, nil)
	if msg != "" && !strings.Contains(msg, "already running") {
		e.t.Fatal(msg)
	}
	if last == nil {
		return ""
	}
	return last.ID
}

type e2eIoC struct {
	Type, Value string
	Score       int
	Tags        []string
}

// iocs returns the feed's live IoCs, sorted by value.
func (e *builtinE2E) iocs(feedID string) []e2eIoC {
	e.t.Helper()
	var d struct{ Iocs struct{ Nodes []e2eIoC } }
	if msg := e.gql(`query($f: ID) { iocs(filter: {feedId: $f}, first: 1000) { nodes { type value score tags } } }`,
		map[string]any{"f": feedID}, &d); msg != "" {
		e.t.Fatal(msg)
	}
	slices.SortFunc(d.Iocs.Nodes, func(a, b e2eIoC) int { return strings.Compare(a.Value, b.Value) })
	return d.Iocs.Nodes
}

func (e *builtinE2E) values(feedID string) []string {
	var out []string
	for _, i := range e.iocs(feedID) {
		out = append(out, i.Value)
	}
	return out
}

// gate holds a vendor's answers until it is opened.
type gate struct {
	next http.Handler
	open chan struct{}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	<-g.open
	g.next.ServeHTTP(w, r)
}

// TestBuiltinDelivery: the eight built-in feeds are delivered enabled,
// polled every 24 h, not editable, deletable or resettable (refused by
// the server), their toggle works; a missing key is named, and a key that
// is set never shows in the API or the log.
func TestBuiltinDelivery(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			srv := vendortest.New(t)
			srv.Handle(vendortest.OpenPhishHost, &vendortest.OpenPhish{Body: []byte("https://a.example.com/x\n")})
			const secret = "phishtank-secret-key-e2e"
			e := startBuiltinE2E(t, dsn(t), srv, map[string]string{"TIFEEDS_PHISHTANK_APP_KEY": secret})
			feeds := e.builtinFeeds()
			if len(feeds) != 8 {
				t.Fatalf("%d built-in feeds, want 8: %v", len(feeds), feeds)
			}
			for kind, f := range feeds {
				if !f.Enabled || f.CanEdit || f.CanDelete || f.CanReset || f.PollingFrequency != 24 || f.Icon == "" ||
					f.Needs == "" || !strings.Contains(f.Description, "Needs:") {
					t.Errorf("%s delivered as %+v", kind, f)
				}
			}
			if m := feeds["OPEN_THREAT_EXCHANGE"].MissingSetting; m == nil || *m != "--otx-api-key (TIFEEDS_OTX_API_KEY)" {
				t.Errorf("OTX without a key: missingSetting %v", m)
			}
			if m := feeds["PHISHING_URL_DATABASE"].MissingSetting; m != nil {
				t.Errorf("PhishTank's key is optional and set: missingSetting %q", *m)
			}
			id := feeds["PHISHING_URL_FEED"].ID
			for op, q := range map[string]string{
				"edit":   `mutation($id: ID!) { updateFeed(id: $id, input: {name: "x"}) { id } }`,
				"delete": `mutation($id: ID!) { deleteFeed(id: $id) }`,
				"reset":  `mutation($id: ID!) { resetPremiumFeed(id: $id) { id } }`,
			} {
				if msg := e.gql(q, map[string]any{"id": id}, nil); msg == "" {
					t.Errorf("%s of a built-in feed accepted", op)
				}
			}
			var off struct{ SetFeedEnabled struct{ Enabled bool } }
			if msg := e.gql(`mutation($id: ID!) { setFeedEnabled(id: $id, enabled: false, confirm: true) { enabled } }`,
				map[string]any{"id": id}, &off); msg != "" || off.SetFeedEnabled.Enabled {
				t.Errorf("disabling a built-in feed: %q %+v", msg, off)
			}
			var all json.RawMessage
			e.gql(`{ feeds(first: 100) { nodes { `+feedFields+` collectionUrl username hasPassword cursor } } }`, nil, &all)
			if strings.Contains(string(all), secret) || strings.Contains(e.stderr.String(), secret) {
				t.Error("a key setting shows in the API or the log")
			}
		})
	}
}

// TestBuiltinOpenPhishE2E runs the OpenPhish feed against the mirror:
// Initializing then Running, the exact URLs, expiry of a dropped URL, an
// unchanged list that stores nothing and says so, and each failure's status,
// after which nothing expired.
func TestBuiltinOpenPhishE2E(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			srv := vendortest.New(t)
			op := &vendortest.OpenPhish{}
			op.Set("http://login.example.com/Owa/\nhttps://bank.example.net/step4.html\nhttps://bank.example.net/step4.html/\n")
			g := &gate{next: op, open: make(chan struct{})}
			srv.Handle(vendortest.OpenPhishHost, g)
			e := startBuiltinE2E(t, dsn(t), srv, nil)
			const kind = "PHISHING_URL_FEED"

			// The first run, started with the server, waits at the vendor.
			deadline := time.Now().Add(20 * time.Second)
			for e.feed(kind).StatusMessage != "Initializing" {
				if time.Now().After(deadline) {
					t.Fatalf("first run not Initializing: %+v", e.feed(kind))
				}
				time.Sleep(20 * time.Millisecond)
			}
			close(g.open)
			f := e.waitRun(kind, "")
			if f.StatusMessage != "Running" || f.Status != "SUCCESS" || f.LastRun.Stored != 3 {
				t.Fatalf("after the first run: %+v %+v\n%s", f, f.LastRun, e.stderr.String())
			}
			got := e.iocs(f.ID)
			want := []e2eIoC{
				{"URL", "http://login.example.com/Owa/", 80, []string{"phishing"}},
				{"URL", "https://bank.example.net/step4.html", 80, []string{"phishing"}},
				{"URL", "https://bank.example.net/step4.html/", 80, []string{"phishing"}},
			}
			if !slices.EqualFunc(got, want, func(a, b e2eIoC) bool {
				return a.Type == b.Type && a.Value == b.Value && a.Score == b.Score && slices.Equal(a.Tags, b.Tags)
			}) {
				t.Fatalf("stored %+v\nwant %+v", got, want)
			}

			// A changed list: the URL dropped from it expires.
			op.Set("http://login.example.com/Owa/\nhttps://bank.example.net/step4.html/\nhttps://new.example.org/p\n")
			f = e.runNow(kind)
			wantValues := []string{"http://login.example.com/Owa/", "https://bank.example.net/step4.html/", "https://new.example.org/p"}
			if f.StatusMessage != "Running" || !slices.Equal(e.values(f.ID), wantValues) {
				t.Fatalf("after a changed list: %s, %q; want Running, %q", f.StatusMessage, e.values(f.ID), wantValues)
			}
			if !strings.Contains(f.LastRun.Note, "1 IoCs no longer listed expired") {
				t.Errorf("note of the changed run: %q", f.LastRun.Note)
			}

			// Unchanged: 304, nothing stored, and the run says so.
			served := op.Served()
			f = e.runNow(kind)
			if f.StatusMessage != "Running" || f.LastRun.Stored != 0 || f.LastRun.Note != "the list has not changed since the last run" ||
				op.Served() != served || !slices.Equal(e.values(f.ID), wantValues) {
				t.Fatalf("unchanged list: %s %+v, served %d→%d", f.StatusMessage, f.LastRun, served, op.Served())
			}

			// Failures: the status says which, and nothing expires.
			op.Set("https://other.example.com/only\nhttps://other.example.com/two\nhttps://other.example.com/three\n")
			for _, tc := range []struct {
				name   string
				status int
				cut    bool
				want   string
			}{
				{"401", 401, false, "Invalid Credentials"},
				{"429", 429, false, "Surpassed Query Limit"},
				{"503", 503, false, "Fetching Data Error"},
				{"cut body", 0, true, "Connection Error"}, // a connection made, then cut (issue 11)
			} {
				op.Fail(tc.status, 0, "3600") // longer than the source waits
				op.SetCut(tc.cut)
				f = e.runNow(kind)
				if f.StatusMessage != tc.want || f.Status != "ERROR" || f.LastRun.ErrorKind != tc.want {
					t.Errorf("%s: %s/%s %+v, want %s", tc.name, f.Status, f.StatusMessage, f.LastRun, tc.want)
				}
				for _, v := range wantValues {
					if !slices.Contains(e.values(f.ID), v) {
						t.Errorf("%s: %s expired after a failed run", tc.name, v)
					}
				}
			}
			op.Fail(0, 0, "")
			op.SetCut(false)
			f = e.runNow(kind)
			if f.StatusMessage != "Running" || len(e.values(f.ID)) != 3 {
				t.Errorf("recovered: %s, %q", f.StatusMessage, e.values(f.ID))
			}
		})
	}
}
