package etopen

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// recorder is vendortest's Recorder that also keeps the download's
// progress.
type recorder struct {
	vendortest.Recorder
	downloaded int64
}

func (r *recorder) Downloaded(read, _ int64) { r.downloaded = read }

// testArchive packs testdata/archive as ET packs its rules.
func testArchive(t *testing.T) []byte {
	t.Helper()
	files := map[string]string{}
	root := filepath.Join("testdata", "archive")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return vendortest.TarGz(files)
}

func serve(t *testing.T, h *vendortest.ETOpen) *Source {
	src, _ := serveRequests(t, h)
	return src
}

// serveRequests serves h and also returns how many requests it got.
func serveRequests(t *testing.T, h *vendortest.ETOpen) (*Source, func() int) {
	srv := vendortest.New(t)
	srv.Handle(vendortest.ETOpenHost, h)
	src := &Source{Settings: feedhttp.Settings{Client: vendortest.MirrorClient(srv.URL), MaxRetryWait: time.Second, RetryBackoff: time.Millisecond}}
	return src, func() int { return len(srv.Requests()) }
}

func brief(ind ioc.Indicator) string {
	return fmt.Sprintf("%s %s %s %d %s", ind.Kind, ind.Value, ind.Source, ind.Score, strings.Join(ind.Tags, ","))
}

func TestFetchArchive(t *testing.T) {
	h := &vendortest.ETOpen{Archive: testArchive(t)}
	src := serve(t, h)
	var got recorder
	cursor, err := src.fetch(context.Background(), source.Request{}, &got)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"rule sid:2404300 et-open 80 et cnc,trojan-activity",
		"ip 192.0.2.10 et-open 80 et cnc",
		"rule sid:2403300 et-open 80 et cins,misc-attack",
		"ip 192.0.2.20 et-open 80 et cins",
		"ip 2001:db8::20 et-open 80 et cins",
		"ip 203.0.113.30 et-open 80 et cins",
		"ip 203.0.113.31 et-open 80 et cins",
		"rule sid:2400000 et-open 50 et drop,misc-attack",
		"rule sid:2030001 et-open 80 et malware,trojan-activity",
		"rule sid:2030003 et-open 50 et malware,trojan-activity",
		"rule sid:2030004 et-open 20 et info,misc-activity",
		"rule sid:2030005 et-open 50 et policy,policy-violation",
		"rule sid:2100498 et-open 50 gpl attack_response,bad-unknown",
	}
	var briefs []string
	for _, ind := range got.Indicators {
		briefs = append(briefs, brief(ind))
	}
	if !slices.Equal(briefs, want) {
		t.Errorf("indicators:\n%s\nwant:\n%s", strings.Join(briefs, "\n"), strings.Join(want, "\n"))
	}
	wantRejected := []string{
		"skipped: network 198.51.100.0/24 in rule 2403300",
		"rule 2400000: invalid indicator",
		"skipped: the rule has no sid",
		"skipped: not a rule (no options in parentheses)",
	}
	if len(got.Rejections) != len(wantRejected) {
		t.Errorf("rejections %q, want %d", got.Rejections, len(wantRejected))
	}
	for _, w := range wantRejected {
		if !slices.ContainsFunc(got.Rejections, func(r string) bool { return strings.Contains(r, w) }) {
			t.Errorf("no rejection %q in %q", w, got.Rejections)
		}
	}
	texts := map[string]string{}
	for _, ind := range got.Indicators {
		if ind.Kind == ioc.Rule {
			texts[ind.Value] = ind.Text
		} else if ind.Text != "" {
			t.Errorf("%s %s has a text", ind.Kind, ind.Value)
		}
	}
	if tx := texts["sid:2030001"]; !strings.HasPrefix(tx, `alert http $HOME_NET any`) || !strings.HasSuffix(tx, "updated_at 2026_06_01;)") {
		t.Errorf("text of sid:2030001 = %q", tx)
	}
	if tx := texts["sid:2030005"]; tx != `alert tcp $HOME_NET any -> $EXTERNAL_NET any (msg:"ET POLICY Long Rule Split Over Two Lines"; flow:established; content:"LONG"; classtype:policy-violation; sid:2030005; rev:1;)` {
		t.Errorf("continued rule's text = %q", tx)
	}
	if !slices.Equal(got.Lists, []string{List}) {
		t.Errorf("lists complete %q, want [%s]", got.Lists, List)
	}
	if len(cursor) != 32 {
		t.Errorf("cursor %q is not the md5", cursor)
	}
	if got.downloaded != int64(len(h.Archive)) {
		t.Errorf("progress %d bytes, want %d", got.downloaded, len(h.Archive))
	}

	// The same sum again: nothing downloaded, nothing complete.
	var again recorder
	next, err := src.fetch(context.Background(), source.Request{Cursor: cursor}, &again)
	if !errors.Is(err, ioc.ErrUnchanged) || next != cursor {
		t.Fatalf("unchanged run: %q, %v; want the cursor and ErrUnchanged", next, err)
	}
	if archive, _ := h.Gets(); archive != 1 || len(again.Indicators) != 0 || len(again.Lists) != 0 {
		t.Errorf("unchanged run: %d archive downloads, %d indicators, lists %q", archive, len(again.Indicators), again.Lists)
	}
}

func TestFetchNewRevision(t *testing.T) {
	rules := func(rev int, text string) map[string]string {
		return map[string]string{"rules/emerging-malware.rules": fmt.Sprintf(
			`alert tcp any any -> any any (msg:"ET MALWARE %s"; content:"x"; classtype:trojan-activity; sid:2031000; rev:%d;)`+"\n", text, rev)}
	}
	h := &vendortest.ETOpen{Archive: vendortest.TarGz(rules(1, "first"))}
	src := serve(t, h)
	var first recorder
	cursor, err := src.fetch(context.Background(), source.Request{}, &first)
	if err != nil {
		t.Fatal(err)
	}
	h.Set(func(h *vendortest.ETOpen) { h.Archive = vendortest.TarGz(rules(2, "second")) })
	var second recorder
	if _, err := src.fetch(context.Background(), source.Request{Cursor: cursor}, &second); err != nil {
		t.Fatal(err)
	}
	if len(second.Indicators) != 1 || second.Indicators[0].Value != first.Indicators[0].Value || !strings.Contains(second.Indicators[0].Text, "rev:2;") {
		t.Errorf("new revision: %+v, want the same value %s with rev 2", second.Indicators, first.Indicators[0].Value)
	}
}

func TestFetchFailures(t *testing.T) {
	archive := testArchive(t)
	big := vendortest.TarGz(map[string]string{"rules/big.rules": strings.Repeat("# padding\n", 1000)})
	// A corrupt archive whose published md5 is its own: the gzip stream,
	// not the sum, finds it.
	corrupt := slices.Clone(archive)
	for i := len(corrupt) / 3; i < len(corrupt)/3+64; i++ {
		corrupt[i] ^= 0x55
	}
	for name, tc := range map[string]struct {
		h        *vendortest.ETOpen
		src      func(*Source)
		want     ioc.FailureKind
		wantErr  string
		requests int // 0: not checked
	}{
		"401":                  {h: &vendortest.ETOpen{Status: 401}, want: ioc.InvalidCredentials, requests: 1},
		"404":                  {h: &vendortest.ETOpen{Status: 404}, want: ioc.InvalidURL, requests: 1},
		"persistent 500":       {h: &vendortest.ETOpen{Status: 500}, want: ioc.FetchingDataError, requests: 1 + DefaultMaxRetries},
		"429 persistent":       {h: &vendortest.ETOpen{Status: 429, RetryAfter: "0"}, want: ioc.SurpassedQueryLimit, requests: 1 + DefaultMaxRetries},
		"429 too long to wait": {h: &vendortest.ETOpen{Status: 429, RetryAfter: "3600"}, want: ioc.SurpassedQueryLimit, requests: 1},
		// Issue 11: a connection made and then cut is a Connection Error.
		"cut body":            {h: &vendortest.ETOpen{Cut: true}, want: ioc.ConnectionError, wantErr: "connection"},
		"corrupt gzip":        {h: &vendortest.ETOpen{Archive: corrupt}, want: ioc.FetchingDataError, wantErr: "not in the expected format"},
		"md5 differs":         {h: &vendortest.ETOpen{MD5: strings.Repeat("ab", 16)}, want: ioc.FetchingDataError, wantErr: "not the published"},
		"md5 not a sum":       {h: &vendortest.ETOpen{MD5: "<html>"}, want: ioc.FetchingDataError, wantErr: "not an md5"},
		"archive over cap":    {src: func(s *Source) { s.MaxArchive = 100 }, want: ioc.FetchingDataError, wantErr: "cap"},
		"entry over cap":      {h: &vendortest.ETOpen{Archive: big}, src: func(s *Source) { s.MaxEntry = 1000 }, want: ioc.FetchingDataError, wantErr: "cap"},
		"decompressed on cap": {h: &vendortest.ETOpen{Archive: big}, src: func(s *Source) { s.MaxTotal = 5000 }, want: ioc.FetchingDataError, wantErr: "cap"},
		"not gzip":            {h: &vendortest.ETOpen{Archive: []byte("<html>maintenance</html>")}, want: ioc.FetchingDataError, wantErr: "not in the expected format"},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.h == nil {
				tc.h = &vendortest.ETOpen{}
			}
			if tc.h.Archive == nil {
				tc.h.Archive = archive
			}
			src, requests := serveRequests(t, tc.h)
			if tc.src != nil {
				tc.src(src)
			}
			var got recorder
			cursor, err := src.fetch(context.Background(), source.Request{Cursor: "before"}, &got)
			if err == nil {
				t.Fatal("no error")
			}
			if k := ioc.FailureOf(err); k != tc.want {
				t.Errorf("failure %q (%v), want %q", k, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not say %q", err, tc.wantErr)
			}
			if cursor != "before" || len(got.Lists) != 0 {
				t.Errorf("failed run moved the cursor to %q or completed %q", cursor, got.Lists)
			}
			if n := requests(); tc.requests != 0 && n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
		})
	}
}

// TestFetchSinkFailure: an error of the sink (the run's limit, the store)
// ends the run as it is, never classified as the archive's fault.
func TestFetchSinkFailure(t *testing.T) {
	src := serve(t, &vendortest.ETOpen{Archive: testArchive(t)})
	stop := errors.New("the store is down")
	got := recorder{Recorder: vendortest.Recorder{Fail: stop}}
	cursor, err := src.fetch(context.Background(), source.Request{Cursor: "before"}, &got)
	if err != stop || cursor != "before" || len(got.Lists) != 0 {
		t.Fatalf("sink failure: %q, %v, lists %q; want the cursor, the sink's error as it is, no list", cursor, err, got.Lists)
	}
}

func TestFetchRetriesAfter(t *testing.T) {
	h := &vendortest.ETOpen{Archive: testArchive(t), Status: 503, RetryAfter: "0", StatusTimes: 2}
	src := serve(t, h)
	var got recorder
	if _, err := src.fetch(context.Background(), source.Request{}, &got); err != nil {
		t.Fatalf("two 503 with Retry-After: %v", err)
	}
	if len(got.Lists) != 1 {
		t.Errorf("lists complete %q", got.Lists)
	}
}

// TestFetchFlatMemory streams a 300,000-rule archive and checks that the
// live heap never grows by more than a bound far below the rules' size:
// the source keeps nothing per rule.
func TestFetchFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 300,000-rule archive")
	}
	const rules = 300_000
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	const perFile = 30_000
	var line bytes.Buffer
	var textBytes int64
	for f := 0; f < rules/perFile; f++ {
		line.Reset()
		for i := 0; i < perFile; i++ {
			sid := 2_000_000 + f*perFile + i
			fmt.Fprintf(&line, `alert ip [192.0.2.%d,198.51.100.%d] any -> $HOME_NET any (msg:"ET CINS Active Threat Intelligence Poor Reputation IP group %d"; reference:url,www.cinsscore.com; threshold: type limit, track by_src, seconds 3600, count 1; classtype:misc-attack; sid:%d; rev:1; metadata:affected_product Any, attack_target Any, deployment Perimeter, tag CINS, signature_severity Major;)`+"\n", i%250, f, i, sid)
		}
		textBytes += int64(line.Len())
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("rules/emerging-%02d.rules", f), Mode: 0o644, Size: int64(line.Len()), Typeflag: tar.TypeReg})
		tw.Write(line.Bytes())
	}
	tw.Close()
	zw.Close()
	line = bytes.Buffer{}
	h := &vendortest.ETOpen{Archive: buf.Bytes()}
	src := serve(t, h)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	sink := &heapSink{every: 20_000}
	if _, err := src.fetch(context.Background(), source.Request{}, sink); err != nil {
		t.Fatal(err)
	}
	if sink.rules != rules {
		t.Fatalf("%d rules, want %d", sink.rules, rules)
	}
	grown := int64(sink.peak) - int64(base)
	const bound = 4 << 20 // under one rules file (about 10 MB here): not even a file is held
	t.Logf("rule text %d MB, live heap grew by at most %d kB", textBytes>>20, grown>>10)
	if grown > bound {
		t.Errorf("live heap grew by %d bytes while streaming %d bytes of rules; want under %d", grown, textBytes, bound)
	}
}

// heapSink drops indicators and samples the live heap every `every` rules.
type heapSink struct {
	source.SinkBase
	every, rules int
	peak         uint64
}

func (h *heapSink) Indicator(_ context.Context, ind ioc.Indicator) error {
	if ind.Kind != ioc.Rule {
		return nil
	}
	h.rules++
	if h.rules%h.every == 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		h.peak = max(h.peak, ms.HeapAlloc)
	}
	return nil
}
func (h *heapSink) Rejected(int64, string)                   {}
func (h *heapSink) Checkpoint(context.Context, string) error { return nil }

var _ http.Handler = (*vendortest.ETOpen)(nil)
