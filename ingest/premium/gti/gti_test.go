package gti_test

import (
	"context"
	"errors"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ingest/premium/gti"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/source/sourcetest"
	"github.com/tifeeds/tifeeds/ioc"
)

type sink struct {
	source.SinkBase
	inds     []ioc.Indicator
	rejected []string
	cursor   string
}

func (s *sink) Indicator(_ context.Context, ind ioc.Indicator) error {
	s.inds = append(s.inds, ind)
	return nil
}
func (s *sink) Rejected(_ int64, reason string) { s.rejected = append(s.rejected, reason) }
func (s *sink) Checkpoint(_ context.Context, c string) error {
	s.cursor = c
	return nil
}

func file(t *testing.T, name string) string {
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// now is 2026-01-01 05:30 UTC: the last hour ended is 04.
var now = time.Date(2026, 1, 1, 5, 30, 0, 0, time.UTC)

func setup(t *testing.T) (*vendortest.GTI, *gti.Source) {
	srv := vendortest.New(t)
	v := vendortest.NewGTI("k-secret")
	srv.Handle(vendortest.GTIHost, v)
	v.SetPackage("malware", "2026010103", file(t, "malware.json"))
	v.SetPackage("phishing", "2026010104", file(t, "phishing.json"))
	return v, &gti.Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), MaxRetries: -1, Now: func() time.Time { return now }}, Grace: time.Hour}
}

// TestFetch: the hours since the backfill bound are read per list; benign
// verdicts and unknown types are skipped and counted; an hour not yet
// published stops its list without an error; the next run reads only the
// hours after the cursor.
func TestFetch(t *testing.T) {
	v, src := setup(t)
	s := &sink{}
	cur, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: now.Add(-3 * time.Hour), Feed: source.Feed{Password: "k-secret"}}, s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range s.inds {
		got = append(got, string(i.Kind)+":"+i.Value)
	}
	want := []string{"sha256:275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f", "domain:c2.example.com",
		"url:https://login.example.net/verify?acct=1"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if f := s.inds[0]; f.Score != 86 || !slices.Equal(f.Tags, []string{"malware", "malwarefamilyagenttesla", "peexe", "signed"}) || f.Source != "gti-malware" {
		t.Errorf("file = %+v", f)
	}
	if len(s.rejected) != 2 || s.rejected[0] != "skipped: benign verdict" {
		t.Errorf("rejected %q", s.rejected)
	}
	// malware 04 ended within the grace and 404: not published yet, the
	// list stops at 03; phishing's 03, older, is an hour without a package.
	if !strings.Contains(cur, `"malware":"2026010103"`) || !strings.Contains(cur, `"phishing":"2026010104"`) {
		t.Errorf("cursor %s", cur)
	}
	// Hour 05 has not ended: never asked; the next run asks malware 04
	// again and reads nothing twice.
	s2 := &sink{}
	if _, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: cur, Since: now.Add(-3 * time.Hour), Feed: source.Feed{Password: "k-secret"}}, s2); err != nil || len(s2.inds) != 0 {
		t.Errorf("second run: %v, %d", err, len(s2.inds))
	}
	if v.Asked("malware", "2026010103") != 1 || v.Asked("malware", "2026010104") != 2 || v.Asked("malware", "2026010105") != 0 {
		t.Errorf("asked 03 %d times, 04 %d, 05 %d", v.Asked("malware", "2026010103"), v.Asked("malware", "2026010104"), v.Asked("malware", "2026010105"))
	}
}

// TestFetchFailures: a failed list is named while the others advance; 401
// is Invalid Credentials; the key never shows.
func TestFetchFailures(t *testing.T) {
	cases := map[string]struct {
		setup  func(v *vendortest.GTI, feed *source.Feed)
		kind   ioc.FailureKind
		failed []string
		inds   int
	}{
		"phishing quota": {setup: func(v *vendortest.GTI, _ *source.Feed) { v.Fail("phishing", 429, "") },
			kind: ioc.SurpassedQueryLimit, failed: []string{"threat list phishing"}, inds: 2},
		"malware cut": {setup: func(v *vendortest.GTI, _ *source.Feed) { v.SetCut("malware", true) },
			kind: ioc.ConnectionError, failed: []string{"threat list malware"}, inds: 2}, // the object before the cut, read again next poll
		"wrong key": {setup: func(_ *vendortest.GTI, feed *source.Feed) { feed.Password = "nope" },
			kind: ioc.InvalidCredentials, failed: []string{"threat list malware", "threat list phishing", "threat list malicious-network-infrastructure"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, src := setup(t)
			feed := source.Feed{Password: "k-secret"}
			tc.setup(v, &feed)
			s := &sink{}
			_, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: now.Add(-3 * time.Hour), Feed: feed}, s)
			var pf *ioc.PartialFailure
			if !errors.As(err, &pf) || !slices.Equal(pf.Names(), tc.failed) || ioc.FailureOf(err) != tc.kind {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(err.Error(), "k-secret") || strings.Contains(err.Error(), "nope") {
				t.Errorf("key shown: %v", err)
			}
			if len(s.inds) != tc.inds {
				t.Errorf("handed %d, want %d", len(s.inds), tc.inds)
			}
		})
	}
}
