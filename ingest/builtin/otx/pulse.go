package otx

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// sourceName is the Source of every indicator.
const sourceName = "otx"

// Scores: OTX has none. A pulse that names malware families or an
// adversary is a more specific report.
const (
	scorePlain    = 60
	scoreAttribed = 70
)

type pulse struct {
	ID              string      `json:"id"`
	Modified        string      `json:"modified"`
	TLP             string      `json:"tlp"`
	Adversary       string      `json:"adversary"`
	Tags            []string    `json:"tags"`
	MalwareFamilies []label     `json:"malware_families"`
	AttackIDs       []label     `json:"attack_ids"`
	Indicators      []indicator `json:"indicators"`
}

// label is a name that OTX gives either as a string or, in some answers, as
// an object {"id": ..., "display_name": ...}; the id is the name.
type label string

func (l *label) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*l = label(s)
		return nil
	}
	var o struct {
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*l = label(o.ID)
	if o.ID == "" {
		*l = label(o.DisplayName)
	}
	return nil
}

type indicator struct {
	Indicator  string  `json:"indicator"`
	Type       string  `json:"type"`
	Expiration *string `json:"expiration"`
	IsActive   active  `json:"is_active"`
}

// active is is_active: 1/0, true/false or absent (active).
type active struct{ inactive bool }

func (a *active) UnmarshalJSON(b []byte) error {
	switch strings.Trim(string(b), `"`) {
	case "0", "false":
		a.inactive = true
	}
	return nil
}

// pulse hands over the indicators of p when it is newer than the walk's
// bound: a pulse modified at or before it was read by an earlier run.
func (s *Source) pulse(ctx context.Context, w *walk, p *pulse, sink source.Sink) error {
	modified, err := parseTime(p.Modified)
	if err != nil {
		w.position += int64(len(p.Indicators))
		sink.Rejected(w.position, fmt.Sprintf("pulse %s: modified %q is not a time", p.ID, p.Modified))
		return nil
	}
	if !modified.After(w.since) {
		return nil
	}
	if modified.After(w.max) {
		w.max = modified
		w.Max = modified.Format(timeLayout)
	}
	score := scorePlain
	if len(p.MalwareFamilies) > 0 || strings.TrimSpace(p.Adversary) != "" {
		score = scoreAttribed
	}
	var tags []string
	for _, t := range p.Tags {
		tags = addTag(tags, t)
	}
	for _, m := range p.MalwareFamilies {
		tags = addTag(tags, string(m))
	}
	for _, a := range p.AttackIDs {
		tags = addTag(tags, string(a))
	}
	if tlp := strings.TrimSpace(p.TLP); tlp != "" && !strings.EqualFold(tlp, "none") {
		tags = addTag(tags, "tlp:"+tlp)
	}
	for _, in := range p.Indicators {
		w.position++
		kind, raw, port, reason := mapType(in.Type, in.Indicator)
		if reason != "" {
			sink.Rejected(w.position, reason)
			continue
		}
		value, err := ioc.Normalize(kind, raw)
		if err != nil {
			sink.Rejected(w.position, fmt.Sprintf("%s: %v", in.Type, err))
			continue
		}
		ind := ioc.Indicator{Kind: kind, Value: value, Source: sourceName, Score: score, Tags: tags, Revoked: in.IsActive.inactive}
		if port != "" {
			ind.Tags = addTag(append([]string(nil), tags...), "port:"+port)
		}
		if in.Expiration != nil && *in.Expiration != "" {
			if t, err := parseTime(*in.Expiration); err == nil {
				ind.ValidUntil = t
			}
		}
		if err := sink.Indicator(ctx, ind); err != nil {
			return err
		}
	}
	return nil
}

// mapType gives the kind of an OTX indicator type, the raw value to
// normalise and the port it named, or why the indicator is skipped.
func mapType(typ, v string) (kind ioc.Kind, raw, port, reason string) {
	v = strings.TrimSpace(v)
	switch typ {
	case "IPv4", "IPv6":
		addr, port := splitIPPort(v)
		return ioc.IP, addr, port, ""
	case "domain", "hostname":
		return ioc.Domain, v, "", ""
	case "URL", "URI":
		// A URI is often a bare path ("/gate.php"), which matches nothing
		// on its own; one holding a full URL is a url.
		if u, err := url.Parse(v); err != nil || u.Scheme == "" || u.Host == "" {
			return "", "", "", fmt.Sprintf("skipped: %s %q is not a full URL", typ, v)
		}
		return ioc.URL, v, "", ""
	case "FileHash-MD5", "FileHash-SHA1", "FileHash-SHA256":
		return hashKind(typ, v), v, "", ""
	}
	return "", "", "", fmt.Sprintf("skipped: %s is not a kind tifeeds keeps", typ)
}

// hashKind is the kind a hash's length says, whatever the type claims
// (feeds put SHA256 values under MD5 labels); another length keeps the
// labelled kind, which Normalize then refuses.
func hashKind(typ, v string) ioc.Kind {
	if kind, ok := ioc.HashKind(v); ok {
		return kind
	}
	switch typ {
	case "FileHash-MD5":
		return ioc.MD5
	case "FileHash-SHA1":
		return ioc.SHA1
	}
	return ioc.SHA256
}

// splitIPPort reads "203.0.113.5:443" and "[2001:db8::5]:443" as an address
// and a port. A bare IPv6 address is not split: its last group is not a
// port.
func splitIPPort(v string) (addr, port string) {
	if ap, err := netip.ParseAddrPort(v); err == nil {
		return ap.Addr().String(), strconv.Itoa(int(ap.Port()))
	}
	return v, ""
}

// addTag appends t lower-cased to tags unless it is empty, the literal
// None, or already there.
func addTag(tags []string, t string) []string {
	t = strings.ToLower(strings.TrimSpace(t))
	if t == "" || t == "none" {
		return tags
	}
	for _, have := range tags {
		if have == t {
			return tags
		}
	}
	return append(tags, t)
}
