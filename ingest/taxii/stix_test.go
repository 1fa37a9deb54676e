package taxii

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
)

var testNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

func TestExtractEnvelope(t *testing.T) {
	f, err := os.Open("testdata/envelope.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sink := &recSink{}
	x := &extractor{source: "Test Collection", now: testNow, normalize: ioc.Normalize}
	var pos int64
	info, err := decodeEnvelope(f, 0, func(o *stixObject, decodeErr error) error {
		pos++
		return x.decoded(context.Background(), pos, o, decodeErr, sink)
	})
	if err != nil {
		t.Fatalf("decodeEnvelope: %v", err)
	}
	if info.More || info.Next != "" || info.Objects != 13 {
		t.Errorf("info = %+v, want more=false, no next, 13 objects", info)
	}

	until := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	tags := []string{"apt-x", "malicious-activity"}
	want := map[string]ioc.Indicator{
		"ip:198.51.100.7":         {Score: 85, Tags: tags, ValidUntil: until},
		"domain:evil.example.com": {Score: 85, Tags: tags, ValidUntil: until},
		"sha256:aec070645fe53ee3b3763059376134f058cc337247c978add178b6ccdfb0019f": {Score: 50},
		"md5:44d88612fea8a8f36de82e1278abb02f":                                    {Score: 50},
		"sha1:3395856ce81f2b7382dee72602f798b642f14140":                           {Score: 50},
		"url:http://phish.example.net/login":                                      {Score: 50, Revoked: true},
		"ip:2001:db8::1":                                                          {Score: 50, Revoked: true},
		"ip:192.0.2.55":                                                           {Score: 50},
		"domain:bad.example.org":                                                  {Score: 50},
		"md5:d41d8cd98f00b204e9800998ecf8427e":                                    {Score: 50},
	}
	got := sink.all()
	if len(got) != len(want) {
		t.Errorf("got %d indicators, want %d: %+v", len(got), len(want), got)
	}
	for _, ind := range got {
		key := string(ind.Kind) + ":" + ind.Value
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected indicator %s", key)
			continue
		}
		if ind.Source != "Test Collection" || ind.Score != w.Score || ind.Revoked != w.Revoked ||
			!ind.ValidUntil.Equal(w.ValidUntil) || !slices.Equal(ind.Tags, w.Tags) {
			t.Errorf("%s = %+v, want %+v", key, ind, w)
		}
	}

	wantRejected := map[int64]string{
		5: "invalid STIX pattern",
		6: "expired",
		7: `pattern_type "snort" is not supported`,
		8: "no equality on a supported observable",
		9: "object is not valid STIX",
	}
	if len(sink.rejected) != len(wantRejected) {
		t.Errorf("rejected = %+v, want positions %v", sink.rejected, wantRejected)
	}
	for _, r := range sink.rejected {
		if w, ok := wantRejected[r.Pos]; !ok || !strings.Contains(r.Reason, w) {
			t.Errorf("rejected at %d: %q; want reason containing %q", r.Pos, r.Reason, w)
		}
	}
}

func TestExtractIndicator(t *testing.T) {
	tests := map[string]struct {
		obj      stixObject
		want     []string // kind:value
		rejected string   // substring of the one rejection, if any
	}{
		"STIX 2.0 indicator without pattern_type": {
			obj:  stixObject{Type: "indicator", ID: "i", Pattern: `[url:value = 'http://a.example/x']`},
			want: []string{"url:http://a.example/x"},
		},
		"IN set and duplicates": {
			obj:  stixObject{Type: "indicator", ID: "i", PatternType: "stix", Pattern: `[domain-name:value IN ('a.example', 'A.example.')] OR [domain-name:value = 'a.example']`},
			want: []string{"domain:a.example"},
		},
		"hash spellings": {
			obj: stixObject{Type: "indicator", ID: "i", PatternType: "stix", Pattern: `[file:hashes.'SHA256' = '` + strings.Repeat("a", 64) +
				`' OR file:hashes.sha_1 = '` + strings.Repeat("b", 40) + `' OR file:hashes.'md5' = '` + strings.Repeat("c", 32) + `' OR file:hashes.'SHA-512' = 'dd']`},
			want: []string{"sha256:" + strings.Repeat("a", 64), "sha1:" + strings.Repeat("b", 40), "md5:" + strings.Repeat("c", 32)},
		},
		"bad value rejected, good kept": {
			obj:      stixObject{Type: "indicator", ID: "i", PatternType: "stix", Pattern: `[ipv4-addr:value = '999.1.1.1' OR ipv4-addr:value = '192.0.2.1']`},
			want:     []string{"ip:192.0.2.1"},
			rejected: `value "999.1.1.1"`,
		},
		"only negated": {
			obj:      stixObject{Type: "indicator", ID: "i", PatternType: "stix", Pattern: `[ipv4-addr:value NOT = '192.0.2.1']`},
			rejected: "no equality",
		},
		"confidence out of range": {
			obj:      stixObject{Type: "indicator", ID: "i", PatternType: "stix", Pattern: `[ipv4-addr:value = '192.0.2.1']`, Confidence: new(101)},
			rejected: "outside 0-100",
		},
		"bad valid_until": {
			obj:      stixObject{Type: "indicator", ID: "i", PatternType: "stix", Pattern: `[ipv4-addr:value = '192.0.2.1']`, ValidUntil: "soon"},
			rejected: "valid_until",
		},
		"revoked and expired is still handed over": {
			obj:  stixObject{Type: "indicator", ID: "i", PatternType: "stix", Pattern: `[ipv4-addr:value = '192.0.2.1']`, ValidUntil: "2020-01-01T00:00:00Z", Revoked: true},
			want: []string{"ip:192.0.2.1"},
		},
		"file without supported hash": {
			obj:      stixObject{Type: "file", ID: "f", Hashes: map[string]string{"SSDEEP": "x"}},
			rejected: "no MD5",
		},
		"file with no hashes is skipped": {
			obj: stixObject{Type: "file", ID: "f"},
		},
		"bad observable value": {
			obj:      stixObject{Type: "domain-name", ID: "d", Value: "not a domain"},
			rejected: "not a domain",
		},
		"other object types are skipped": {
			obj: stixObject{Type: "malware", ID: "m"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sink := &recSink{}
			x := &extractor{source: "s", now: testNow, normalize: ioc.Normalize}
			if err := x.object(context.Background(), 1, &tc.obj, sink); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ind := range sink.all() {
				got = append(got, string(ind.Kind)+":"+ind.Value)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("indicators = %v, want %v", got, tc.want)
			}
			switch {
			case tc.rejected == "" && len(sink.rejected) > 0:
				t.Errorf("unexpected rejections %+v", sink.rejected)
			case tc.rejected != "" && (len(sink.rejected) != 1 || !strings.Contains(sink.rejected[0].Reason, tc.rejected)):
				t.Errorf("rejections %+v, want one containing %q", sink.rejected, tc.rejected)
			}
		})
	}
}

func TestExtractSinkErrorStops(t *testing.T) {
	sink := &recSink{failAfter: 2}
	x := &extractor{source: "s", now: testNow, normalize: ioc.Normalize}
	o := stixObject{Type: "indicator", ID: "i", PatternType: "stix",
		Pattern: `[ipv4-addr:value = '192.0.2.1'] OR [ipv4-addr:value = '192.0.2.2'] OR [ipv4-addr:value = '192.0.2.3']`}
	if err := x.object(context.Background(), 1, &o, sink); err != errSinkFull {
		t.Fatalf("object = %v, want the sink's error", err)
	}
	if n := len(sink.all()); n != 1 {
		t.Errorf("handed %d indicators after the sink failed, want 1", n)
	}
}

func TestAddedAfter(t *testing.T) {
	now := time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		cursor string
		since  time.Time
		want   string
	}{
		"first run":           {"", BackfillSince(now, 7), "2026-06-23T12:00:00.000Z"},
		"backfill clamped":    {"", BackfillSince(now, 90), "2026-05-31T12:00:00.000Z"},
		"negative backfill":   {"", BackfillSince(now, -1), "2026-06-30T12:00:00.000Z"},
		"recent cursor kept":  {"2026-06-29T01:02:03.456789Z", BackfillSince(now, 7), "2026-06-29T01:02:03.456789Z"},
		"old cursor bounded":  {"2026-01-01T00:00:00Z", BackfillSince(now, 3), "2026-06-27T12:00:00.000Z"},
		"bad cursor is none":  {"yesterday", BackfillSince(now, 1), "2026-06-29T12:00:00.000Z"},
		"no bound":            {"2020-01-01T00:00:00Z", time.Time{}, "2020-01-01T00:00:00Z"},
		"no bound, no cursor": {"", time.Time{}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := AddedAfter(tc.cursor, tc.since); got != tc.want {
				t.Errorf("AddedAfter(%q, %s) = %q, want %q", tc.cursor, tc.since, got, tc.want)
			}
		})
	}
}
