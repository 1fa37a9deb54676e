package taxii

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/internal/suricata"
	"github.com/tifeeds/tifeeds/ioc"
)

const etRule = `alert ip [192.0.2.1,198.51.100.2] any -> $HOME_NET any (msg:"ET CNC Feodo Tracker \"x\"; reported"; reference:url,feodotracker.abuse.ch; classtype:trojan-activity; sid:2404000; rev:1; metadata:signature_severity Major;)`

// An indicator with pattern_type suricata is one Rule IoC: its value the
// sid, its text the rule, its score and tags those of the indicator, else
// the rule's, as ET Open reads them.
func TestExtractSuricataRule(t *testing.T) {
	until := testNow.Add(24 * time.Hour)
	tests := map[string]struct {
		obj       stixObject
		wantScore int
		wantTags  []string
	}{
		"as tifeeds exports it": {
			obj: stixObject{Type: "indicator", ID: "indicator--r", PatternType: "suricata", Pattern: etRule,
				Confidence: new(77), Labels: []string{"et cnc", "seed"}, ValidUntil: until.Format("2006-01-02T15:04:05Z")},
			wantScore: 77, wantTags: []string{"et cnc", "seed", "trojan-activity"},
		},
		"no confidence: the rule's severity, padded with blanks": {
			obj:       stixObject{Type: "indicator", ID: "indicator--r", PatternType: "suricata", Pattern: "  " + etRule + "\t"},
			wantScore: 80, wantTags: []string{"et cnc", "trojan-activity"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sink := &recSink{}
			x := &extractor{source: "s", now: testNow, normalize: ioc.Normalize}
			if err := x.object(context.Background(), 1, &tc.obj, sink); err != nil {
				t.Fatal(err)
			}
			got := sink.all()
			if len(sink.rejected) > 0 || len(got) != 1 {
				t.Fatalf("indicators %+v, rejected %+v; want one rule", got, sink.rejected)
			}
			r := got[0]
			// The addresses of an IP-only rule are not IoCs of their own
			// here: the server sends its IP IoCs as indicators of their own.
			if r.Kind != ioc.Rule || r.Value != "sid:2404000" || r.Text != etRule || r.Score != tc.wantScore ||
				!slices.Equal(r.Tags, tc.wantTags) || r.Source != "s" {
				t.Errorf("rule = %+v, want sid:2404000 with the rule's text, score %d, tags %v", r, tc.wantScore, tc.wantTags)
			}
		})
	}
}

// A pattern that is not one Suricata rule tifeeds keeps is a rejected row
// that says why; the run goes on.
func TestExtractSuricataRuleRejected(t *testing.T) {
	tests := map[string]struct {
		pattern, patternType, reason string
	}{
		"no sid":             {`alert tcp any any -> any 80 (msg:"x";)`, "suricata", "suricata rule: the rule has no sid"},
		"sid not a number":   {`alert tcp any any -> any 80 (msg:"x"; sid:abc;)`, "suricata", "sid is not a positive number"},
		"not a rule":         {`[ipv4-addr:value = '192.0.2.1']`, "suricata", "suricata rule: not a rule"},
		"bad header":         {`alert tcp any any any 80 (sid:1;)`, "suricata", "the header is not"},
		"open quote":         {`alert tcp any any -> any 80 (msg:"x; sid:1;)`, "suricata", "a quote is not closed"},
		"commented out":      {`# alert tcp any any -> any 80 (sid:1;)`, "suricata", "not a rule"},
		"empty":              {``, "suricata", "not a rule"},
		"second rule hidden": {"alert tcp any any -> any 80 (sid:1;)\nalert tcp any any -> any 81 (sid:2;)", "suricata", "spans several lines"},
		"oversized":          {`alert tcp any any -> any 80 (msg:"` + strings.Repeat("a", suricata.MaxLen) + `"; sid:1;)`, "suricata", "longer than 1048576 bytes"},
		"snort is not taken": {`alert tcp any any -> any 80 (sid:1;)`, "snort", `pattern_type "snort" is not supported`},
		"expired":            {`alert tcp any any -> any 80 (sid:1;)`, "suricata", "expired"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := stixObject{Type: "indicator", ID: "indicator--r", PatternType: tc.patternType, Pattern: tc.pattern}
			if name == "expired" {
				o.ValidUntil = "2020-01-01T00:00:00Z"
			}
			sink := &recSink{}
			x := &extractor{source: "s", now: testNow, normalize: ioc.Normalize}
			if err := x.object(context.Background(), 3, &o, sink); err != nil {
				t.Fatalf("a bad rule stopped the run: %v", err)
			}
			if got := sink.all(); len(got) != 0 {
				t.Errorf("handed over %+v", got)
			}
			if len(sink.rejected) != 1 || sink.rejected[0].Pos != 3 || !strings.Contains(sink.rejected[0].Reason, tc.reason) ||
				!strings.HasPrefix(sink.rejected[0].Reason, "indicator--r: ") {
				t.Errorf("rejected %+v, want one at 3 naming the indicator and saying %q", sink.rejected, tc.reason)
			}
		})
	}
}

// A rule of exactly the bound is kept: the bound is the ET Open source's.
func TestExtractSuricataRuleAtBound(t *testing.T) {
	head, tail := `alert tcp any any -> any 80 (msg:"`, `"; sid:9;)`
	text := head + strings.Repeat("a", suricata.MaxLen-len(head)-len(tail)) + tail
	sink := &recSink{}
	x := &extractor{source: "s", now: testNow, normalize: ioc.Normalize}
	o := stixObject{Type: "indicator", ID: "indicator--r", PatternType: "suricata", Pattern: text}
	if err := x.object(context.Background(), 1, &o, sink); err != nil {
		t.Fatal(err)
	}
	if got := sink.all(); len(got) != 1 || got[0].Value != "sid:9" || len(got[0].Text) != suricata.MaxLen {
		t.Errorf("rule of %d bytes: indicators %d, rejected %+v", len(text), len(got), sink.rejected)
	}
}
