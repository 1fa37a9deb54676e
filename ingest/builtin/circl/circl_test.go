package circl

import (
	"context"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ioc"
)

const uuidPrefix = "5f1c2a3b-0000-4000-8000-00000000000"

func newFeed(t *testing.T) *vendortest.CIRCL {
	t.Helper()
	h := &vendortest.CIRCL{Events: map[string][]byte{}}
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if name == "manifest" {
			h.Manifest = b
		} else {
			h.Events[name] = b
		}
	}
	return h
}

func newSource(t *testing.T, h *vendortest.CIRCL) (*Source, *vendortest.Server) {
	t.Helper()
	srv := vendortest.New(t)
	srv.Handle("www.circl.lu", h)
	return &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), Sleep: func(context.Context, time.Duration) error { return nil }}}, srv
}

var since = time.Date(2025, 10, 15, 0, 0, 0, 0, time.UTC)

func paths(srv *vendortest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		out = append(out, strings.TrimPrefix(r.URL.Path, "/doc/misp/feed-osint/"))
	}
	return out
}

func TestFetchMapping(t *testing.T) {
	src, srv := newSource(t, newFeed(t))
	var rec vendortest.Recorder
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1762128000/" + uuidPrefix + "4"; cursor != want {
		t.Errorf("cursor %q, want %q", cursor, want)
	}
	wantPaths := []string{"manifest.json", uuidPrefix + "1.json", uuidPrefix + "2.json", uuidPrefix + "3.json", uuidPrefix + "4.json"}
	if got := paths(srv); !slices.Equal(got, wantPaths) {
		t.Errorf("requests %q, want %q (oldest first, none before since)", got, wantPaths)
	}
	e1 := []string{"tlp:white", `osint:source-type="blog-post"`, "malware:loader"}
	port := func(p string) []string { return append(slices.Clone(e1), "port:"+p) }
	cases := map[string]struct {
		kind  ioc.Kind
		value string
		score int
		tags  []string
	}{
		"ip-dst":                        {ioc.IP, "203.0.113.20", 90, e1},
		"ip-dst|port":                   {ioc.IP, "203.0.113.21", 90, port("8080")},
		"ipv6 ip-src|port":              {ioc.IP, "2001:db8::7", 90, port("8443")},
		"ip-dst holding ip:port":        {ioc.IP, "203.0.113.22", 90, port("443")},
		"domain lower-cased":            {ioc.Domain, "evil.example.com", 90, e1},
		"hostname is a domain":          {ioc.Domain, "mail.example.net", 90, e1},
		"url":                           {ioc.URL, "http://dropper.example.org/a.exe", 90, e1},
		"md5":                           {ioc.MD5, "0cc175b9c0f1b6a831c399e269772661", 90, e1},
		"sha1 under a sha256 type":      {ioc.SHA1, "86f7e437faa5a7fce15d1ddcb9eaeaea377667b8", 90, e1},
		"filename|sha256 with a pipe":   {ioc.SHA256, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb", 90, e1},
		"filename|md5":                  {ioc.MD5, "92eb5ffee6ae2fec3ad71c777531578f", 90, e1},
		"object attribute":              {ioc.SHA1, "e9d71f5ee7c92d6dc9e92ffdad17b8bd49418f98", 90, e1},
		"tags after attributes":         {ioc.Domain, "late.example.com", 30, []string{"tlp:green"}},
		"event tags replace manifest's": {ioc.URL, "https://pay.example.org/invoice", 50, []string{"tlp:clear"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := rec.Find(c.kind, c.value)
			if !ok {
				t.Fatalf("no %s %s among %v", c.kind, c.value, rec.Indicators)
			}
			if got.Score != c.score || !slices.Equal(got.Tags, c.tags) || got.Source != "circl-osint" || got.Revoked || !got.ValidUntil.IsZero() {
				t.Errorf("got %+v, want score %d tags %q from circl-osint", got, c.score, c.tags)
			}
		})
	}
	if len(rec.Indicators) != len(cases) {
		t.Errorf("%d indicators, want %d (to_ids false, links, deleted and objects deleted give none): %v", len(rec.Indicators), len(cases), rec.Indicators)
	}
	wantRejected := []string{
		`manifest: "../../secret" is not an event uuid`,
		"sha1: invalid indicator: sha1 must be 40 hex digits, got 39 characters",
		"skipped: link is a reference, not an indicator",
		"skipped: text is not a kind tifeeds keeps",
		`ip-dst: invalid indicator: not an IP address: "198.51.100.0/24"`,
		"event " + uuidPrefix + "4 is listed in the manifest but missing",
	}
	if len(rec.Rejections) != len(wantRejected) {
		t.Fatalf("rejected %q, want %q", rec.Rejections, wantRejected)
	}
	for i, w := range wantRejected {
		if !strings.Contains(rec.Rejections[i], w) {
			t.Errorf("rejected[%d] = %q, want ... %q", i, rec.Rejections[i], w)
		}
	}
	for _, v := range []string{"192.0.2.200", "192.0.2.201", "192.0.2.202", "context.example.com"} {
		for _, in := range rec.Indicators {
			if in.Value == v {
				t.Errorf("%s became an indicator", v)
			}
		}
	}
}

// Events of the same second are told apart by uuid: a cursor between them
// reads the second one, and a cursor at the end reads nothing.
func TestFetchCursor(t *testing.T) {
	cases := map[string]struct {
		cursor string
		events []string
	}{
		"between two events of one second": {"1762041600/" + uuidPrefix + "2", []string{"3", "4"}},
		"bare timestamp":                   {"1762041600", []string{"4"}},
		"at the end":                       {"1762128000/" + uuidPrefix + "4", nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src, srv := newSource(t, newFeed(t))
			var rec vendortest.Recorder
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: c.cursor, Since: since}, &rec)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"manifest.json"}
			for _, e := range c.events {
				want = append(want, uuidPrefix+e+".json")
			}
			if got := paths(srv); !slices.Equal(got, want) {
				t.Errorf("requests %q, want %q", got, want)
			}
			if c.events == nil && (cursor != c.cursor || len(rec.Indicators) != 0) {
				t.Errorf("unchanged feed: cursor %q, %d indicators", cursor, len(rec.Indicators))
			}
		})
	}
}

func TestFetchResumesAfterCutEvent(t *testing.T) {
	h := newFeed(t)
	h.CutEvent = uuidPrefix + "2"
	src, _ := newSource(t, h)
	var rec vendortest.Recorder
	_, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since}, &rec)
	if ioc.FailureOf(err) != ioc.ConnectionError {
		t.Fatalf("err %v, want Connection Error", err)
	}
	if want := []string{"1761955200/" + uuidPrefix + "1"}; !slices.Equal(rec.Checkpoints, want) {
		t.Fatalf("checkpoints %q, want %q", rec.Checkpoints, want)
	}
	h.CutEvent = ""
	var rec2 vendortest.Recorder
	if _, err := src.fetch(context.Background(), source.Request{Cursor: rec.Checkpoints[0], Since: since}, &rec2); err != nil {
		t.Fatal(err)
	}
	if _, ok := rec2.Find(ioc.Domain, "late.example.com"); !ok {
		t.Error("the resumed run missed the cut event")
	}
	if _, ok := rec2.Find(ioc.IP, "203.0.113.20"); ok {
		t.Error("the resumed run read the checkpointed event again")
	}
}

func TestFetchFailures(t *testing.T) {
	cases := map[string]struct {
		h        *vendortest.CIRCL
		max      int64
		want     ioc.FailureKind
		requests int
	}{
		"no manifest":          {h: &vendortest.CIRCL{}, want: ioc.InvalidURL, requests: 1},
		"persistent 503":       {h: &vendortest.CIRCL{FailStatus: 503}, want: ioc.FetchingDataError, requests: 4},
		"one 429 waited out":   {h: &vendortest.CIRCL{FailStatus: 429, FailTimes: 1, RetryAfter: "3"}, want: "", requests: 6},
		"not json":             {h: &vendortest.CIRCL{Manifest: []byte("<html>maintenance</html>")}, want: ioc.FetchingDataError, requests: 1},
		"event over the bound": {max: 1000, want: ioc.FetchingDataError, requests: 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := newFeed(t)
			if c.h != nil {
				c.h.Events = h.Events
				if c.h.Manifest == nil && c.h.FailStatus != 0 {
					c.h.Manifest = h.Manifest
				}
				h = c.h
			}
			src, srv := newSource(t, h)
			src.MaxEventBytes = c.max
			_, err := src.fetch(context.Background(), source.Request{Cursor: "", Since: since}, &vendortest.Recorder{})
			if c.want == "" && err != nil || c.want != "" && ioc.FailureOf(err) != c.want {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if n := len(srv.Requests()); n != c.requests {
				t.Errorf("%d requests, want %d", n, c.requests)
			}
		})
	}
}
