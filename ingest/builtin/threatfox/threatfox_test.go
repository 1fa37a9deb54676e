package threatfox

import (
	"bytes"
	"context"
	"errors"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ioc"
)

func ind(kind ioc.Kind, v string, score int, tags ...string) ioc.Indicator {
	return ioc.Indicator{Kind: kind, Value: v, Source: List, Score: score, Tags: tags}
}

var all = []ioc.Indicator{
	// reference (a report URL) is never an indicator; "None" gives no tag.
	ind(ioc.Domain, "c2-panel.example.net", 100, "unknown rat", "unknown_rat", "botnet_cc", "c2", "connectwise", "domain", "rat", "screenconnect"),
	ind(ioc.IP, "203.0.113.71", 100, "valleyrat", "win.valley_rat", "winos", "botnet_cc", "rat", "port:443"),
	// IPv6 with a port, no brackets: split at the last colon.
	ind(ioc.IP, "2001:db8::5", 80, "cobalt strike", "win.cobalt_strike", "agentemis", "beacon", "cobaltstrike", "cobeacon", "botnet_cc", "port:8443"),
	// is_compromised: a hacked legitimate site, its score capped.
	ind(ioc.URL, "http://198.51.100.33/wp-includes/payload.exe", CompromisedScore, "asyncrat", "win.asyncrat", "payload_delivery", "compromised", "wordpress"),
	// An MD5 under sha256_hash: the length decides; no confidence_level.
	ind(ioc.MD5, "d41d8cd98f00b204e9800998ecf8427e", DefaultScore, "agent tesla", "win.agent_tesla", "payload"),
	ind(ioc.SHA1, "da39a3ee5e6b4b0d3255bfef95601890afd80709", 90, "remcos", "win.remcos", "remcosrat", "payload", "exe"),
	ind(ioc.IP, "2001:db8::7", 60, "mirai", "elf.mirai", "botnet_cc", "port:8080"),
}

var allRejected = []string{
	"16: md5_hash of 42 characters is not an MD5, SHA1 or SHA256",
	"17: skipped: sha3_384_hash is not a kind tifeeds keeps",
	`18: ip:port "203.0.113.9" has no port`,
	"19: invalid indicator: not an IP address",
	`20: first_seen_utc "last tuesday" is not a date`,
}

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		after    state
		since    time.Time
		want     []ioc.Indicator
		rejected []string
		next     state
	}{
		"first run: # header, spaces after commas, an added column, awkward rows": {
			want: all, rejected: allRejected,
			next: state{Seen: "2026-11-02 15:23:26", IDs: []string{"1793316", "1793315"}},
		},
		"first run bounded by the backfill window": {
			since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
			want:  all[:6], rejected: allRejected,
			next: state{Seen: "2026-11-02 15:23:26", IDs: []string{"1793316", "1793315"}},
		},
		"rows newer than the cursor": {
			after: state{Seen: "2026-11-02 15:00:00", IDs: []string{"1793313"}},
			want:  all[:3], rejected: allRejected[4:],
			next: state{Seen: "2026-11-02 15:23:26", IDs: []string{"1793316", "1793315"}},
		},
		"a new row in the cursor's second": {
			after: state{Seen: "2026-11-02 15:23:26", IDs: []string{"1793316"}},
			want:  all[1:2], rejected: allRejected[4:],
			next: state{Seen: "2026-11-02 15:23:26", IDs: []string{"1793316", "1793315"}},
		},
		"nothing new": {
			after:    state{Seen: "2026-11-02 15:23:26", IDs: []string{"1793316", "1793315"}},
			rejected: allRejected[4:],
			next:     state{Seen: "2026-11-02 15:23:26", IDs: []string{"1793316", "1793315"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var rec vendortest.Recorder
			next, err := parse(context.Background(), bytes.NewReader(vendortest.Testdata(t, "recent.csv")), tc.after, tc.since, &rec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rec.Indicators, tc.want) {
				t.Errorf("indicators\n got %+v\nwant %+v", rec.Indicators, tc.want)
			}
			if len(rec.Rejections) != len(tc.rejected) {
				t.Fatalf("rejected %q, want %q", rec.Rejections, tc.rejected)
			}
			for i, r := range rec.Rejections {
				if !strings.HasPrefix(r, tc.rejected[i]) {
					t.Errorf("rejection %d is %q, want %q…", i, r, tc.rejected[i])
				}
			}
			if !reflect.DeepEqual(next, tc.next) {
				t.Errorf("state %+v, want %+v", next, tc.next)
			}
		})
	}
}

func TestSplitHostPort(t *testing.T) {
	for in, want := range map[string][2]string{
		"203.0.113.5:443":     {"203.0.113.5", "443"},
		"2001:db8::5:8443":    {"2001:db8::5", "8443"},
		"[2001:db8::5]:8443":  {"2001:db8::5", "8443"},
		"203.0.113.5":         {"", ""},
		"203.0.113.5:":        {"", ""},
		"203.0.113.5:70000":   {"", ""},
		"203.0.113.5:+443":    {"", ""},
		"[2001:db8::5]8443":   {"", ""},
		"c2.example.com:8080": {"c2.example.com", "8080"},
	} {
		h, p, ok := splitHostPort(in)
		if ok != (want[1] != "") || h != want[0] || p != want[1] {
			t.Errorf("splitHostPort(%q) = %q, %q, %v; want %q, %q", in, h, p, ok, want[0], want[1])
		}
	}
}

func TestFetch(t *testing.T) {
	const key = "abusech-test-auth-key"
	full := `{"seen":"2026-11-02 15:23:26","ids":["1793316","1793315"]`
	for name, tc := range map[string]struct {
		key    string
		vendor *vendortest.AbuseCh
		cursor string
		want   int
		next   string // prefix of the returned cursor
		kind   ioc.FailureKind
		err    error
		tries  int
	}{
		"keyless":           {vendor: &vendortest.AbuseCh{}, want: len(all), next: full, tries: 1},
		"with the Auth-Key": {key: key, vendor: &vendortest.AbuseCh{AuthKey: key}, want: len(all), next: full, tries: 1},
		"no Auth-Key where abuse.ch wants one": {
			vendor: &vendortest.AbuseCh{AuthKey: key}, kind: ioc.InvalidCredentials, tries: 1,
		},
		"unchanged export": {
			vendor: &vendortest.AbuseCh{ETag: `"t1"`}, cursor: full + `,"export":{"etag":"\"t1\""}}`,
			err: ioc.ErrUnchanged, next: full, tries: 1,
		},
		"402 from abuse.ch": {
			vendor: &vendortest.AbuseCh{FileFaults: vendortest.FileFaults{Status: 402}}, kind: ioc.SurpassedQueryLimit, tries: 1,
		},
		"one 503 with Retry-After is waited out": {
			vendor: &vendortest.AbuseCh{FileFaults: vendortest.FileFaults{Status: 503, StatusTimes: 1, RetryAfter: "0"}},
			want:   len(all), next: full, tries: 2,
		},
		"a persistent 429": {
			vendor: &vendortest.AbuseCh{FileFaults: vendortest.FileFaults{Status: 429, RetryAfter: "0"}},
			kind:   ioc.SurpassedQueryLimit, tries: 1 + DefaultMaxRetries,
		},
		"a body cut mid-way": {
			vendor: &vendortest.AbuseCh{FileFaults: vendortest.FileFaults{CutAt: 1500}}, kind: ioc.ConnectionError, want: -1, tries: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := vendortest.New(t)
			v := tc.vendor
			v.Path, v.Body = vendortest.ThreatFoxPath, vendortest.Testdata(t, "recent.csv")
			srv.Handle(vendortest.ThreatFoxHost, v)
			var rec vendortest.Recorder
			s := &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), RetryBackoff: time.Millisecond, MaxRetryWait: time.Second}}
			cursor, err := s.fetch(context.Background(), source.Request{Cursor: tc.cursor, Feed: source.Feed{Key: tc.key}}, &rec)
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
			case tc.kind != "":
				if err == nil || ioc.FailureOf(err) != tc.kind {
					t.Fatalf("error %v, want %s", err, tc.kind)
				}
				if cursor != tc.cursor {
					t.Errorf("a failed fetch moved the cursor to %q", cursor)
				}
				if len(rec.Checkpoints) != 0 {
					t.Errorf("a failed fetch checkpointed %q", rec.Checkpoints)
				}
			case err != nil:
				t.Fatal(err)
			}
			if tc.kind == ioc.InvalidCredentials && !strings.Contains(err.Error(), "--abusech-auth-key") {
				t.Errorf("the error does not name the setting: %v", err)
			}
			if tc.want >= 0 && len(rec.Indicators) != tc.want {
				t.Errorf("%d indicators, want %d", len(rec.Indicators), tc.want)
			}
			if !strings.HasPrefix(cursor, tc.next) {
				t.Errorf("cursor %q, want %q…", cursor, tc.next)
			}
			if tc.kind == "" && tc.err == nil && (len(rec.Checkpoints) != 1 || rec.Checkpoints[0] != cursor) {
				t.Errorf("checkpoints %q, want the cursor returned", rec.Checkpoints)
			}
			if len(rec.Lists) != 0 {
				t.Errorf("an incremental export completed lists %q", rec.Lists)
			}
			if n := v.Requests(); n != tc.tries {
				t.Errorf("%d requests, want %d", n, tc.tries)
			}
			for _, r := range srv.Requests() {
				if got := r.Header.Get("Auth-Key"); got != tc.key {
					t.Errorf("Auth-Key %q, want %q", got, tc.key)
				}
			}
		})
	}
}

// A second run over the same export adds nothing.
func TestFetchAgainAddsNothing(t *testing.T) {
	srv := vendortest.New(t)
	srv.Handle(vendortest.ThreatFoxHost, vendortest.NewThreatFox(vendortest.Testdata(t, "recent.csv")))
	s := &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL)}}
	var first, second vendortest.Recorder
	cursor, err := s.fetch(context.Background(), source.Request{}, &first)
	if err != nil || len(first.Indicators) != len(all) {
		t.Fatalf("first run: %v, %d indicators", err, len(first.Indicators))
	}
	if _, err := s.fetch(context.Background(), source.Request{Cursor: cursor}, &second); err != nil {
		t.Fatal(err)
	}
	if len(second.Indicators) != 0 {
		t.Errorf("the second run read again %+v", second.Indicators)
	}
}
