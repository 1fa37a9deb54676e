package risklist_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ingest/premium/risklist"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/source/sourcetest"
	"github.com/tifeeds/tifeeds/ioc"
)

// sink records what the source hands over. share, when positive, is the
// poll's share of a constant rate: the indicator that uses it up is stored
// and answered with source.ErrPaceReached, as the runner does.
type sink struct {
	source.SinkBase
	share      int
	inds       []ioc.Indicator
	rejected   []string
	cursor     string
	complete   map[string]time.Time
	written    int64
	total      int64
	backlogSet bool
}

func (s *sink) Indicator(_ context.Context, ind ioc.Indicator) error {
	if s.share > 0 && len(s.inds) >= s.share {
		return errors.New("test sink: handed over after the share was used up")
	}
	s.inds = append(s.inds, ind)
	if s.share > 0 && len(s.inds) == s.share {
		return fmt.Errorf("%w: test share", source.ErrPaceReached)
	}
	return nil
}
func (s *sink) Rejected(_ int64, reason string)                   { s.rejected = append(s.rejected, reason) }
func (s *sink) Checkpoint(_ context.Context, cursor string) error { s.cursor = cursor; return nil }
func (s *sink) ListComplete(source string, since time.Time) {
	if s.complete == nil {
		s.complete = map[string]time.Time{}
	}
	s.complete[source] = since
}
func (s *sink) Backlog(written, total int64) {
	s.written, s.total, s.backlogSet = written, total, true
}

func values(inds []ioc.Indicator) []string {
	var out []string
	for _, i := range inds {
		out = append(out, string(i.Kind)+":"+i.Value)
	}
	return out
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newVendor(t *testing.T) (*vendortest.RecordedFuture, *risklist.Source) {
	srv := vendortest.New(t)
	rf := vendortest.NewRecordedFuture("tok-secret")
	for _, l := range risklist.Lists {
		rf.SetList(l, readFile(t, l+".csv"))
	}
	srv.Handle(vendortest.RecordedFutureHost, rf)
	return rf, &risklist.Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), MaxRetries: -1}}
}

// TestFetchMapping: the four lists map by entity, score Risk, tags the
// EvidenceDetails rules; CIDRs, SHA-512 and bad JSON are rejected; every
// list read whole is complete; a second poll downloads nothing.
func TestFetchMapping(t *testing.T) {
	rf, src := newVendor(t)
	s := &sink{}
	cursor, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: time.Time{}, Feed: source.Feed{Password: "tok-secret"}}, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ip:192.0.2.10", "ip:2001:db8::91f2:a9b2:e09a:6fc6", "ip:203.0.113.7",
		"domain:bad.example.com", "domain:phish.example.net", "url:http://bad.example.com/gate.php?id=1",
		"md5:44d88612fea8a8f36de82e1278abb02f", "sha1:3395856ce81f2b7382dee72602f798b642f14140",
		"sha256:275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f"}
	if got := values(s.inds); !slices.Equal(got, want) {
		t.Errorf("values = %v\nwant %v", got, want)
	}
	first := s.inds[0]
	if first.Score != 99 || first.Source != "rf-ip" || !slices.Equal(first.Tags, []string{"historically linked to intrusion method", "current c&c server"}) {
		t.Errorf("first = %+v", first)
	}
	if len(s.rejected) != 3 || !strings.Contains(strings.Join(s.rejected, "|"), "SHA-512 hash is not a kind") {
		t.Errorf("rejected = %q", s.rejected)
	}
	if len(s.complete) != 4 {
		t.Errorf("complete lists = %v", s.complete)
	}
	if s.written != 12 || s.total != 12 {
		t.Errorf("backlog = %d/%d, want 12/12", s.written, s.total)
	}
	s2 := &sink{}
	if _, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: cursor, Since: time.Time{}, Feed: source.Feed{Password: "tok-secret"}}, s2); !errors.Is(err, ioc.ErrUnchanged) {
		t.Fatalf("second poll: %v, want ErrUnchanged", err)
	}
	if rf.Downloads("ip") != 1 || rf.Heads("ip") != 2 || len(s2.inds) != 0 {
		t.Errorf("unchanged list downloaded again: gets %d heads %d", rf.Downloads("ip"), rf.Heads("ip"))
	}
	// A changed list alone is downloaded again.
	rf.SetList("url", readFile(t, "url.csv"))
	s3 := &sink{}
	if _, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: cursor, Since: time.Time{}, Feed: source.Feed{Password: "tok-secret"}}, s3); err != nil {
		t.Fatal(err)
	}
	if rf.Downloads("url") != 2 || rf.Downloads("ip") != 1 || len(s3.inds) != 1 {
		t.Errorf("after a change: url gets %d, ip gets %d, handed %d", rf.Downloads("url"), rf.Downloads("ip"), len(s3.inds))
	}
}

// TestFetchConstantRate: with a share of 2 a poll, the lists go on across
// polls from the cursor, none is complete before its last row, and each
// ends with its pass's start as the expiry bound.
func TestFetchConstantRate(t *testing.T) {
	_, src := newVendor(t)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src.Now = func() time.Time { return clock }
	var got []string
	cursor := ""
	var polls []*sink
	for i := 0; i < 6; i++ {
		s := &sink{share: 2}
		c, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: cursor, Since: time.Time{}, Feed: source.Feed{Password: "tok-secret"}}, s)
		if i == 5 {
			if !errors.Is(err, ioc.ErrUnchanged) {
				t.Errorf("poll after the last share: %v, want unchanged", err)
			}
			break
		}
		if err != nil && !errors.Is(err, source.ErrPaceReached) {
			t.Fatalf("poll %d: %v", i, err)
		}
		got = append(got, values(s.inds)...)
		cursor = s.cursor
		if err == nil {
			cursor = c
		}
		polls = append(polls, s)
		clock = clock.Add(time.Hour)
	}
	if len(got) != 9 || len(slices.Compact(slices.Clone(got))) != 9 {
		t.Errorf("handed over %v", got)
	}
	if _, ok := polls[0].complete["rf-ip"]; ok {
		t.Error("the ip list was complete after its first share")
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if since, ok := polls[1].complete["rf-ip"]; !ok || !since.Equal(start) {
		t.Errorf("ip list complete %v at %v, want at the pass start %v", ok, since, start)
	}
	// The lists not reached yet are sized: the total counts every list.
	if polls[0].written != 2 || polls[0].total != 12 {
		t.Errorf("backlog after the first poll = %d/%d, want 2/12", polls[0].written, polls[0].total)
	}
	if last := polls[4]; last.written != 12 || last.total != 12 || len(last.complete) != 1 {
		t.Errorf("backlog after the fifth poll = %d/%d, complete %v", last.written, last.total, last.complete)
	}
}

// TestFetchRotation: a list that changes before every poll does not hold
// the ones after it back: each poll starts with the list the last one was
// writing and goes round, so with a share of 2 every list is written whole
// within five polls (the ip list, changed mid-pass, expires nothing); a
// share that ends on a list's last row completes it.
func TestFetchRotation(t *testing.T) {
	rf, src := newVendor(t)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src.Now = func() time.Time { return clock }
	complete := map[string]int{} // list -> the poll that completed it first
	cursor := ""
	var handed [][]string
	for poll := 1; poll <= 5; poll++ {
		s := &sink{share: 2}
		c, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: cursor, Since: time.Time{}, Feed: source.Feed{Password: "tok-secret"}}, s)
		if err != nil && !errors.Is(err, source.ErrPaceReached) {
			t.Fatalf("poll %d: %v", poll, err)
		}
		cursor = c
		handed = append(handed, values(s.inds))
		for l := range s.complete {
			if complete[l] == 0 {
				complete[l] = poll
			}
		}
		rf.SetList("ip", readFile(t, "ip.csv")) // a new version of the ip list each time
		clock = clock.Add(time.Hour)
	}
	// The ip list changed during its pass: it expires nothing (0).
	want := map[string]int{"rf-ip": 0, "rf-domain": 3, "rf-url": 3, "rf-hash": 5}
	for l, p := range want {
		if complete[l] != p {
			t.Errorf("%s complete at poll %d, want %d (handed per poll %q)", l, complete[l], p, handed)
		}
	}
	if !strings.Contains(cursor, `"next":"ip"`) {
		t.Errorf("after the hash list the next poll starts again at ip: %s", cursor)
	}
}

// TestFetchPartialFailure: a failed list is named while the others are
// handed over and complete; a 401 is Invalid Credentials; a cut body a
// connection error; without a key nothing is asked.
func TestFetchPartialFailure(t *testing.T) {
	cases := map[string]struct {
		setup    func(rf *vendortest.RecordedFuture, feed *source.Feed)
		kind     ioc.FailureKind
		failed   []string
		handedAt int
	}{
		"hash list 500": {setup: func(rf *vendortest.RecordedFuture, _ *source.Feed) { rf.Fail("hash", 500, "") },
			kind: ioc.FetchingDataError, failed: []string{"risk list hash"}, handedAt: 6},
		"domain list 429": {setup: func(rf *vendortest.RecordedFuture, _ *source.Feed) { rf.Fail("domain", 429, "1") },
			kind: ioc.SurpassedQueryLimit, failed: []string{"risk list domain"}, handedAt: 7},
		"url list cut": {setup: func(rf *vendortest.RecordedFuture, _ *source.Feed) { rf.SetCut("url", true) },
			kind: ioc.ConnectionError, failed: []string{"risk list url"}, handedAt: 8},
		"wrong token": {setup: func(_ *vendortest.RecordedFuture, feed *source.Feed) { feed.Password = "wrong" },
			kind: ioc.InvalidCredentials, failed: []string{"risk list ip", "risk list domain", "risk list url", "risk list hash"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rf, src := newVendor(t)
			feed := source.Feed{Password: "tok-secret"}
			tc.setup(rf, &feed)
			s := &sink{}
			_, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: time.Time{}, Feed: feed}, s)
			var pf *ioc.PartialFailure
			if !errors.As(err, &pf) {
				t.Fatalf("err = %v, want a PartialFailure", err)
			}
			if !slices.Equal(pf.Names(), tc.failed) || ioc.FailureOf(err) != tc.kind {
				t.Errorf("failed %v kind %q, want %v %q (%v)", pf.Names(), ioc.FailureOf(err), tc.failed, tc.kind, err)
			}
			if strings.Contains(err.Error(), "tok-secret") || strings.Contains(err.Error(), "wrong") {
				t.Errorf("the key shows: %v", err)
			}
			if len(s.inds) != tc.handedAt || len(s.complete) != 4-len(tc.failed) {
				t.Errorf("handed %d, complete %v", len(s.inds), s.complete)
			}
			if len(tc.failed) < 4 && !strings.Contains(s.cursor, `"done":true`) {
				t.Errorf("the good lists' cursor was not checkpointed: %s", s.cursor)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		rf, src := newVendor(t)
		_, err := sourcetest.Fetch(context.Background(), src, source.Request{Cursor: "", Since: time.Time{}, Feed: source.Feed{Password: ""}}, &sink{})
		if ioc.FailureOf(err) != ioc.InvalidCredentials || rf.Heads("ip") != 0 {
			t.Errorf("err = %v, heads %d", err, rf.Heads("ip"))
		}
	})
}
