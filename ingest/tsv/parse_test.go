package tsv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// recorder is a sink that keeps what it is given.
type recorder struct {
	source.SinkBase
	inds     []ioc.Indicator
	rejected map[int64]string
	failAt   int // Indicator fails on this call (1-based); 0 never
}

func (r *recorder) Indicator(_ context.Context, ind ioc.Indicator) error {
	r.inds = append(r.inds, ind)
	if r.failAt > 0 && len(r.inds) == r.failAt {
		return errSink
	}
	return nil
}

func (r *recorder) Rejected(pos int64, reason string) {
	if r.rejected == nil {
		r.rejected = map[int64]string{}
	}
	r.rejected[pos] = reason
}

func (r *recorder) Checkpoint(context.Context, string) error { return nil }

var errSink = errors.New("sink full")

func readFile(t *testing.T, name string) (*recorder, int64) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := &recorder{}
	n, err := Read(context.Background(), f, rec)
	if err != nil {
		t.Fatalf("Read(%s): %v", name, err)
	}
	return rec, n
}

func TestReadGood(t *testing.T) {
	rec, lines := readFile(t, "testdata/good.tsv")
	if lines != 11 {
		t.Errorf("lines = %d, want 11", lines)
	}
	if len(rec.rejected) != 0 {
		t.Errorf("rejected = %v, want none (BOM, CRLF, header, comment and blank lines are accepted)", rec.rejected)
	}
	want := []ioc.Indicator{
		{Kind: ioc.URL, Value: "http://evil.example.com/Path?x=1", Source: "phish_kit", Score: 90},
		{Kind: ioc.IP, Value: "192.0.2.10", Source: "botnet-C2", Score: 75},
		{Kind: ioc.Domain, Value: "xn--bcher-kva.example", Source: "Typo_Squat", Score: 50},
		{Kind: ioc.MD5, Value: "d41d8cd98f00b204e9800998ecf8427e", Source: "Emotet", Score: 100},
		{Kind: ioc.SHA1, Value: "da39a3ee5e6b4b0d3255bfef95601890afd80709", Source: "Emotet", Score: 0},
		{Kind: ioc.SHA256, Value: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Source: "Emotet", Score: 90},
		{Kind: ioc.IP, Value: "192.0.2.10", Source: "scanner", Score: 20},
	}
	if len(rec.inds) != len(want) {
		t.Fatalf("got %d indicators, want %d: %+v", len(rec.inds), len(want), rec.inds)
	}
	for i, w := range want {
		got := rec.inds[i]
		if !slices.Equal(got.Tags, []string{Tag}) {
			t.Errorf("row %d tags = %v, want [%s]", i, got.Tags, Tag)
		}
		got.Tags = nil
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("row %d = %+v, want %+v", i, got, w)
		}
	}
}

func TestReadBadRows(t *testing.T) {
	rec, lines := readFile(t, "testdata/bad.tsv")
	if lines != 22 {
		t.Errorf("lines = %d, want 22", lines)
	}
	want := map[int64]string{
		2:  `unknown TYPE "URL"`,
		3:  `unknown TYPE "ipv4"`,
		4:  `VALUE "2001:db8::1" is not an IPv4 address`,
		5:  `VALUE "192.0.2.300" is not an IPv4 address`,
		6:  `VALUE "localhost" is not a valid domain: "localhost" is not a fully qualified domain name`,
		7:  `VALUE "192.0.2.1" is not a valid domain`,
		8:  `VALUE "abc" is not a valid md5-hash: md5 must be 32 hex digits`,
		9:  `VALUE "d41d8cd98f00b204e9800998ecf8427e" is not a valid sha1-hash`,
		10: `VALUE "example.com/path" is not a valid url: not an absolute URL`,
		11: `SOURCE "bad source" may hold only A-Z a-z 0-9 _ -`,
		12: `SOURCE "bad.source" may hold only`,
		13: `empty SOURCE`,
		14: `SCORE "101" is not an integer from 0 to 100`,
		15: `SCORE "-1" is not an integer`,
		16: `SCORE "9.5" is not an integer`,
		17: `empty SCORE`,
		18: `expected 4 tab-separated fields (TYPE VALUE SOURCE SCORE), got 3`,
		19: `got 5`,
		20: `got 1`,
		21: `empty VALUE`,
	}
	for line, reason := range want {
		got, ok := rec.rejected[line]
		if !ok {
			t.Errorf("line %d not rejected, want %q", line, reason)
			continue
		}
		if !strings.Contains(got, reason) {
			t.Errorf("line %d reason = %q, want it to contain %q", line, got, reason)
		}
	}
	for line, reason := range rec.rejected {
		if _, ok := want[line]; !ok {
			t.Errorf("line %d rejected unexpectedly: %s", line, reason)
		}
	}
	if len(rec.inds) != 1 || rec.inds[0].Value != "good.example" || rec.inds[0].Score != 100 {
		t.Errorf("indicators = %+v, want only good.example with score 100", rec.inds)
	}
}

func TestReadEdges(t *testing.T) {
	tests := map[string]struct {
		in           string
		wantLines    int64
		wantValues   []string
		wantRejected map[int64]string
	}{
		"empty":               {"", 0, nil, nil},
		"no final newline":    {"ip\t192.0.2.1\ts\t1", 1, []string{"192.0.2.1"}, nil},
		"only comments":       {"# a\n#b\n\n", 3, nil, nil},
		"header only first":   {"ip\t192.0.2.1\ts\t1\nTYPE\tVALUE\tSOURCE\tSCORE\n", 2, []string{"192.0.2.1"}, map[int64]string{2: `unknown TYPE "TYPE"`}},
		"bom then comment":    {"\ufeff# c\r\nip\t192.0.2.1\ts\t1\r\n", 2, []string{"192.0.2.1"}, nil},
		"bom not on line 2":   {"ip\t192.0.2.1\ts\t1\n\ufeffip\t192.0.2.2\ts\t1\n", 2, []string{"192.0.2.1"}, map[int64]string{2: "unknown TYPE"}},
		"spaces around field": {"domain\t Example.com \t s \t 7 \n", 1, []string{"example.com"}, nil},
		"too long line":       {"ip\t192.0.2.1\ts\t1\nurl\thttp://a.example/" + strings.Repeat("a", MaxLineLen) + "\ts\t1\nip\t192.0.2.3\ts\t1\n", 3, []string{"192.0.2.1", "192.0.2.3"}, map[int64]string{2: "line longer than"}},
		"source too long":     {"ip\t192.0.2.1\t" + strings.Repeat("s", MaxSourceLen+1) + "\t1\n", 1, nil, map[int64]string{1: "SOURCE longer than"}},
		"score leading zeros": {"ip\t192.0.2.1\ts\t0000\nip\t192.0.2.2\ts\t00101\n", 2, []string{"192.0.2.1"}, map[int64]string{2: "SCORE"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			n, err := Read(context.Background(), strings.NewReader(tc.in), rec)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.wantLines {
				t.Errorf("lines = %d, want %d", n, tc.wantLines)
			}
			var values []string
			for _, ind := range rec.inds {
				values = append(values, ind.Value)
			}
			if !slices.Equal(values, tc.wantValues) {
				t.Errorf("values = %q, want %q", values, tc.wantValues)
			}
			if len(rec.rejected) != len(tc.wantRejected) {
				t.Errorf("rejected = %v, want %v", rec.rejected, tc.wantRejected)
			}
			for line, reason := range tc.wantRejected {
				if !strings.Contains(rec.rejected[line], reason) {
					t.Errorf("line %d reason = %q, want %q", line, rec.rejected[line], reason)
				}
			}
		})
	}
}

func TestReadSinkErrorAborts(t *testing.T) {
	rec := &recorder{failAt: 2}
	in := "ip\t192.0.2.1\ts\t1\nip\t192.0.2.2\ts\t1\nip\t192.0.2.3\ts\t1\n"
	n, err := Read(context.Background(), strings.NewReader(in), rec)
	if !errors.Is(err, errSink) {
		t.Fatalf("err = %v, want the sink's error", err)
	}
	if n != 2 || len(rec.inds) != 2 {
		t.Errorf("lines = %d, indicators = %d; want the read to stop at line 2", n, len(rec.inds))
	}
}

func TestReadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := strings.Repeat("ip\t192.0.2.1\ts\t1\n", 5000)
	_, err := Read(ctx, strings.NewReader(in), &recorder{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n > 0 {
		return 0, errors.New("connection reset")
	}
	f.n++
	return copy(p, "ip\t192.0.2.1\ts\t1\nip\t19"), nil
}

func TestReadBrokenBody(t *testing.T) {
	rec := &recorder{}
	_, err := Read(context.Background(), &failingReader{}, rec)
	if err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("err = %v, want the reader's error", err)
	}
	if len(rec.inds) != 1 {
		t.Errorf("indicators = %d, want the one complete row", len(rec.inds))
	}
}

// BenchmarkRead measures parsing and normalisation alone.
func BenchmarkRead(b *testing.B) {
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, "domain\thost%d.example.com\tsrc\t90\nurl\thttp://h%d.example.com/a?b=%d\tsrc\t50\n", i, i, i)
	}
	in := sb.String()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := Read(context.Background(), strings.NewReader(in), &recorder{}); err != nil {
			b.Fatal(err)
		}
	}
}
