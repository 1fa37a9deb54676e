package taxii

import (
	"slices"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/stix"
)

// The patterns tifeeds' STIX export writes are valid STIX patterning by this
// package's parser (the STIX 2.1 grammar, STIXPattern.g4), and read back to
// the same kind and value, hostile quotes and backslashes included. No
// reference STIX pattern validator could be had here (Debian has none, pip
// is not available, no Go module implements one): this parser and the round
// trip are the check.
func TestExportPatternsRoundTrip(t *testing.T) {
	cases := []struct {
		kind  ioc.Kind
		value string
	}{
		{ioc.URL, "http://evil.example/a?q='1' OR '1'='1"},
		{ioc.URL, `http://evil.example/\x\\'\'`},
		{ioc.URL, "http://evil.example/ünï]cødé[0]"},
		{ioc.IP, "192.0.2.1"},
		{ioc.IP, "2001:db8::1"},
		{ioc.Domain, "evil.example"},
		{ioc.MD5, "d41d8cd98f00b204e9800998ecf8427e"},
		{ioc.SHA1, "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{ioc.SHA256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{ioc.CertSHA1, "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
	}
	for _, c := range cases {
		pattern, typ := stix.Pattern(c.kind, c.value, "")
		if typ != stix.PatternSTIX {
			t.Fatalf("%s: pattern_type %q", c.kind, typ)
		}
		cmps, err := parsePattern(pattern)
		if err != nil {
			t.Fatalf("%s %q: pattern %s does not parse: %v", c.kind, c.value, pattern, err)
		}
		if len(cmps) != 1 || len(cmps[0].Strings) != 1 || cmps[0].Strings[0] != c.value {
			t.Fatalf("%s %q: pattern %s reads back as %+v", c.kind, c.value, pattern, cmps)
		}
		if kind, ok := comparisonKind(cmps[0]); !ok || kind != c.kind {
			t.Errorf("%s: pattern %s reads back as kind %q", c.kind, pattern, kind)
		}
	}
	rule := `alert http any any -> any any (msg:"it's \"x\""; sid:1;)`
	if p, typ := stix.Pattern(ioc.Rule, "sid:1", rule); p != rule || typ != stix.PatternSuricata {
		t.Errorf("rule: %q %q", p, typ)
	}
}

// An exported indicator is one the client extracts again, for every kind,
// through the normalisation ingestion stores values with: what one tifeeds
// serves, another ingests as the same IoC (a rule with its text).
func TestExportIndicatorExtracts(t *testing.T) {
	now := time.Now().UTC()
	cases := []stix.IoC{
		// Values in their stored form: ingestion percent-encodes quotes and
		// backslashes in a path, not in a query.
		{Kind: ioc.URL, Value: `http://evil.example/a?q='1'\x"y\\'`},
		{Kind: ioc.URL, Value: "http://evil.example/it%27s%5Chere"},
		{Kind: ioc.IP, Value: "192.0.2.1"},
		{Kind: ioc.IP, Value: "2001:db8::1"},
		{Kind: ioc.Domain, Value: "evil.example"},
		{Kind: ioc.MD5, Value: "d41d8cd98f00b204e9800998ecf8427e"},
		{Kind: ioc.SHA1, Value: "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{Kind: ioc.SHA256, Value: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{Kind: ioc.CertSHA1, Value: "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{Kind: ioc.Rule, Value: "sid:2404000", Text: etRule},
	}
	for _, c := range cases {
		c.Score, c.Tags = 73, []string{"phishing"}
		c.FirstSeen, c.ExpiresAt, c.ChangedAt = now.Add(-time.Hour), now.Add(time.Hour), now
		ind := stix.NewIndicator(c, "identity--x")
		o := &stixObject{Type: ind.Type, ID: ind.ID, Pattern: ind.Pattern, PatternType: ind.PatternType,
			ValidUntil: ind.ValidUntil, Confidence: &ind.Confidence, Labels: ind.Labels}
		sink := &recSink{}
		x := &extractor{source: "s", now: now, normalize: ioc.Normalize}
		if err := x.object(t.Context(), 1, o, sink); err != nil {
			t.Fatal(err)
		}
		got := sink.pending
		if len(got) != 1 || got[0].Kind != c.Kind || got[0].Value != c.Value || got[0].Text != c.Text || got[0].Score != 73 ||
			!slices.Contains(got[0].Tags, "phishing") || !got[0].ValidUntil.Equal(now.Add(time.Hour).Truncate(time.Microsecond)) {
			t.Errorf("%s %q: extracted %+v, rejected %v", c.Kind, c.Value, got, sink.rejected)
		}
	}
}
