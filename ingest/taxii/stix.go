package taxii

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// DefaultScore is the score of an indicator whose STIX object carries no
// confidence, and of bare cyber-observable objects.
const DefaultScore = 50

// stixObject holds the fields of a STIX 2.1 object that extraction reads;
// json ignores the rest.
type stixObject struct {
	Type           string            `json:"type"`
	ID             string            `json:"id"`
	Modified       string            `json:"modified"`
	Pattern        string            `json:"pattern"`
	PatternType    string            `json:"pattern_type"`
	ValidUntil     string            `json:"valid_until"`
	Confidence     *int              `json:"confidence"`
	Labels         []string          `json:"labels"`
	IndicatorTypes []string          `json:"indicator_types"`
	Revoked        bool              `json:"revoked"`
	Value          string            `json:"value"`
	Hashes         map[string]string `json:"hashes"`
}

// NormalizeFunc turns a raw value of a kind into its stored form, or says
// why it is not a valid value of that kind. ioc.Normalize has this shape.
type NormalizeFunc func(kind ioc.Kind, raw string) (string, error)

// extractor turns STIX objects into indicators for a sink.
type extractor struct {
	source    string
	now       time.Time
	normalize NormalizeFunc
}

// decoded handles one element of an envelope's objects: the object, or the
// reason it could not be decoded.
func (x *extractor) decoded(ctx context.Context, pos int64, o *stixObject, decodeErr error, sink source.Sink) error {
	if decodeErr != nil {
		sink.Rejected(pos, fmt.Sprintf("object is not valid STIX: %v", decodeErr))
		return nil
	}
	return x.object(ctx, pos, o, sink)
}

// object hands over the indicators of one STIX object. Unusable objects are
// reported with sink.Rejected; only an error of the sink itself is returned.
// Objects that are neither indicators nor supported observables (reports,
// identities, relationships...) are skipped silently: they are context, not
// IoCs.
func (x *extractor) object(ctx context.Context, pos int64, o *stixObject, sink source.Sink) error {
	switch o.Type {
	case "indicator":
		return x.indicator(ctx, pos, o, sink)
	case "ipv4-addr", "ipv6-addr":
		return x.observable(ctx, pos, o, ioc.IP, o.Value, sink)
	case "domain-name":
		return x.observable(ctx, pos, o, ioc.Domain, o.Value, sink)
	case "url":
		return x.observable(ctx, pos, o, ioc.URL, o.Value, sink)
	case "file":
		found := false
		for _, alg := range slices.Sorted(maps.Keys(o.Hashes)) {
			v := o.Hashes[alg]
			kind, ok := hashKind(alg)
			if !ok {
				continue
			}
			found = true
			if err := x.observable(ctx, pos, o, kind, v, sink); err != nil {
				return err
			}
		}
		if !found && len(o.Hashes) > 0 {
			sink.Rejected(pos, fmt.Sprintf("%s: no MD5, SHA-1 or SHA-256 hash", o.ID))
		}
		return nil
	}
	return nil
}

func (x *extractor) observable(ctx context.Context, pos int64, o *stixObject, kind ioc.Kind, raw string, sink source.Sink) error {
	v, err := x.normalize(kind, raw)
	if err != nil {
		sink.Rejected(pos, fmt.Sprintf("%s: %s value %q: %v", o.ID, kind, raw, err))
		return nil
	}
	return sink.Indicator(ctx, ioc.Indicator{Kind: kind, Value: v, Source: x.source, Score: DefaultScore})
}

func (x *extractor) indicator(ctx context.Context, pos int64, o *stixObject, sink source.Sink) error {
	// pattern_type is required in STIX 2.1; STIX 2.0 indicators have none
	// and are always STIX patterns.
	if o.PatternType != "" && o.PatternType != "stix" && o.PatternType != patternTypeSuricata {
		sink.Rejected(pos, fmt.Sprintf("%s: pattern_type %q is not supported", o.ID, o.PatternType))
		return nil
	}
	base := ioc.Indicator{Source: x.source, Score: DefaultScore, Revoked: o.Revoked, Tags: tags(o.Labels, o.IndicatorTypes)}
	if o.Confidence != nil {
		if *o.Confidence < 0 || *o.Confidence > 100 {
			sink.Rejected(pos, fmt.Sprintf("%s: confidence %d is outside 0-100", o.ID, *o.Confidence))
			return nil
		}
		base.Score = *o.Confidence
	}
	if o.ValidUntil != "" {
		t, err := time.Parse(time.RFC3339Nano, o.ValidUntil)
		if err != nil {
			sink.Rejected(pos, fmt.Sprintf("%s: valid_until %q is not an RFC 3339 timestamp", o.ID, o.ValidUntil))
			return nil
		}
		// A revoked indicator is handed over whatever its validity, so that
		// the runner removes the sighting it may have stored earlier.
		if !o.Revoked && !t.After(x.now) {
			sink.Rejected(pos, fmt.Sprintf("%s: expired (valid_until %s)", o.ID, o.ValidUntil))
			return nil
		}
		base.ValidUntil = t.UTC()
	}
	if o.PatternType == patternTypeSuricata {
		return x.rule(ctx, pos, o, base, sink)
	}
	cmps, err := parsePattern(o.Pattern)
	if err != nil {
		sink.Rejected(pos, fmt.Sprintf("%s: %v", o.ID, err))
		return nil
	}
	type key struct {
		kind  ioc.Kind
		value string
	}
	seen := make(map[key]bool)
	handed := 0
	for _, c := range cmps {
		kind, ok := comparisonKind(c)
		if !ok {
			continue
		}
		for _, raw := range c.Strings {
			v, err := x.normalize(kind, raw)
			if err != nil {
				sink.Rejected(pos, fmt.Sprintf("%s: %s value %q: %v", o.ID, kind, raw, err))
				handed++ // reported: not "no supported observable"
				continue
			}
			if seen[key{kind, v}] {
				continue
			}
			seen[key{kind, v}] = true
			ind := base
			ind.Kind, ind.Value = kind, v
			if err := sink.Indicator(ctx, ind); err != nil {
				return err
			}
			handed++
		}
	}
	if handed == 0 {
		sink.Rejected(pos, fmt.Sprintf("%s: pattern has no equality on a supported observable (ipv4-addr, ipv6-addr, domain-name, url, file hashes)", o.ID))
	}
	return nil
}

// comparisonKind says which kind of indicator a comparison yields: only
// positive equality (= or IN) on a supported object path counts.
func comparisonKind(c comparison) (ioc.Kind, bool) {
	if c.Negated || (c.Op != "=" && c.Op != "IN") {
		return "", false
	}
	switch {
	case len(c.Path) == 1 && c.Path[0] == "value":
		switch c.Object {
		case "ipv4-addr", "ipv6-addr":
			return ioc.IP, true
		case "domain-name":
			return ioc.Domain, true
		case "url":
			return ioc.URL, true
		}
	case len(c.Path) == 2 && c.Object == "file" && c.Path[0] == "hashes":
		return hashKind(c.Path[1])
	case len(c.Path) == 2 && c.Object == "x509-certificate" && c.Path[0] == "hashes":
		// A certificate's fingerprint, as tifeeds' own STIX export writes it.
		if k, ok := hashKind(c.Path[1]); ok && k == ioc.SHA1 {
			return ioc.CertSHA1, true
		}
	}
	return "", false
}

// hashKind maps a STIX hash algorithm name in any of its common spellings
// (MD5, SHA-1, SHA1, sha_256, 'SHA-256') to a kind.
func hashKind(alg string) (ioc.Kind, bool) {
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(alg))
	switch name {
	case "MD5":
		return ioc.MD5, true
	case "SHA1":
		return ioc.SHA1, true
	case "SHA256":
		return ioc.SHA256, true
	}
	return "", false
}

// tags joins labels and indicator types, without empties or repeats.
func tags(lists ...[]string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, l := range lists {
		for _, t := range l {
			t = strings.TrimSpace(t)
			if t == "" || seen[t] {
				continue
			}
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
