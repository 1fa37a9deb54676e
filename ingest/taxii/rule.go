package taxii

import (
	"context"
	"fmt"
	"strings"

	"github.com/tifeeds/tifeeds/ingest/internal/suricata"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// patternTypeSuricata is the STIX pattern type of an indicator whose
// pattern is one Suricata rule, as tifeeds' own STIX export writes rules.
// Snort rules (pattern_type snort) are refused: tifeeds would store them as
// Suricata rules and give them back as such (rules export, STIX export),
// and Suricata does not load every Snort rule.
const patternTypeSuricata = "suricata"

// rule hands over the Rule IoC of an indicator whose pattern is a Suricata
// rule. The rule is read as the ET Open source reads its rules (one rule a
// line, identified by its sid, bounded in length); a rule that does not
// read is a rejected row. base carries what the indicator says besides its
// pattern (validity, confidence, labels).
func (x *extractor) rule(ctx context.Context, pos int64, o *stixObject, base ioc.Indicator, sink source.Sink) error {
	text := strings.TrimSpace(o.Pattern)
	if len(text) > suricata.MaxLen {
		sink.Rejected(pos, fmt.Sprintf("%s: suricata rule longer than %d bytes", o.ID, suricata.MaxLen))
		return nil
	}
	// One rule is one line: a line break could carry a second rule, under
	// another sid, into the rules file tifeeds exports.
	if strings.ContainsAny(text, "\r\n") {
		sink.Rejected(pos, fmt.Sprintf("%s: suricata rule spans several lines", o.ID))
		return nil
	}
	r, err := suricata.Parse(text)
	if err != nil {
		sink.Rejected(pos, fmt.Sprintf("%s: suricata rule: %v", o.ID, err))
		return nil
	}
	v, err := x.normalize(ioc.Rule, ioc.RuleValue(r.SID))
	if err != nil {
		sink.Rejected(pos, fmt.Sprintf("%s: suricata rule: %v", o.ID, err))
		return nil
	}
	ind := base
	ind.Kind, ind.Value, ind.Text = ioc.Rule, v, r.Text
	if o.Confidence == nil {
		ind.Score = r.Score
	}
	ind.Tags = tags(base.Tags, r.Tags)
	return sink.Indicator(ctx, ind)
}
