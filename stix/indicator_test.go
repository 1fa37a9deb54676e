package stix

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tifeeds/tifeeds/ioc"
)

func TestIndicatorIDIsUUIDv5OfKindAndValue(t *testing.T) {
	// Fixed for good: consumers deduplicate on it across pulls and releases.
	if got := IndicatorID(ioc.Domain, "evil.example"); got != IndicatorID(ioc.Domain, "evil.example") ||
		!strings.HasPrefix(got, "indicator--") || got[11+14] != '5' {
		t.Fatalf("IndicatorID = %s: want a stable UUIDv5", got)
	}
	if IndicatorID(ioc.Domain, "x") == IndicatorID(ioc.URL, "x") {
		t.Error("the kind is not part of the id")
	}
	// Pinned, computed independently: Python's uuid.uuid5(uuid.uuid5(
	// NAMESPACE_URL, "urn:tifeeds:stix"), "ip:192.0.2.1").
	if got := IndicatorID(ioc.IP, "192.0.2.1"); got != "indicator--b2419736-a8fa-5904-9f51-502f60a4906e" {
		t.Errorf("id %s", got)
	}
}

func TestQuoteEscapesQuotesAndBackslashes(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:    `'plain'`,
		`it's`:     `'it\'s'`,
		`a\b`:      `'a\\b'`,
		`\'`:       `'\\\''`,
		`ünï"cødé`: `'ünï"cødé'`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestNewIndicatorProperties(t *testing.T) {
	first := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ind := NewIndicator(IoC{Kind: ioc.Rule, Value: strings.Repeat("é", 300), Text: "alert ip any any -> any any (sid:1;)",
		Score: 120, FirstSeen: first, ExpiresAt: first.Add(-time.Hour), ChangedAt: first.Add(time.Hour)}, "identity--x")
	if ind.PatternType != PatternSuricata || ind.Confidence != 100 || ind.ValidUntil != "" ||
		ind.Created != "2026-11-01T00:00:00.000000Z" || ind.Modified != "2026-11-01T01:00:00.000000Z" || ind.ValidFrom != ind.Created {
		t.Errorf("indicator %+v", ind)
	}
	if !utf8.ValidString(ind.Name) || len(ind.Name) > maxNameLen+len("rule: ")+len("…") {
		t.Errorf("name %q", ind.Name)
	}
	// A change stamp before the first sighting (clocks of two instances):
	// created is never after modified.
	ind = NewIndicator(IoC{Kind: ioc.IP, Value: "2001:db8::1", FirstSeen: first, ChangedAt: first.Add(-time.Second),
		ExpiresAt: first.Add(time.Hour)}, "identity--x")
	if ind.Created != ind.Modified || ind.Pattern != "[ipv6-addr:value = '2001:db8::1']" || ind.ValidUntil == "" {
		t.Errorf("indicator %+v", ind)
	}
}
