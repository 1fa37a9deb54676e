package circl

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/internal/jsonstream"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// reader reads the events of one run, counting attributes for Rejected.
type reader struct {
	src      *Source
	sink     source.Sink
	position int64
}

type attribute struct {
	Type    string   `json:"type"`
	Value   string   `json:"value"`
	ToIDs   flexBool `json:"to_ids"`
	Deleted flexBool `json:"deleted"`
}

type object struct {
	Deleted   flexBool    `json:"deleted"`
	Attribute []attribute `json:"Attribute"`
}

// event streams one event's attributes, and those of its objects, to the
// sink. The event's own level and tags, when they come before its
// attributes, replace the manifest's (they are the same event's, so they
// agree unless the event changed since the manifest was written).
func (r *reader) event(ctx context.Context, ev event, n int64) error {
	u := feedBase + ev.uuid + ".json"
	g := r.src.getter()
	resp, err := g.Get(ctx, u, feedhttp.Validators{})
	if err != nil {
		if ioc.FailureOf(err) == ioc.InvalidURL && ctx.Err() == nil {
			// Listed but not published (the manifest is written apart from
			// the events): one missing event must not stop the feed for good.
			r.sink.Rejected(n, fmt.Sprintf("event %s is listed in the manifest but missing: %v", ev.uuid, err))
			return nil
		}
		return err
	}
	defer feedhttp.Close(resp)
	b := feedhttp.NewBody(r.sink, resp, feedhttp.Or(r.src.MaxEventBytes, DefaultMaxEventBytes))
	dec := json.NewDecoder(b)
	err = func() error {
		if err := jsonstream.Expect(dec, '{'); err != nil {
			return err
		}
		found := false
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			if key != "Event" {
				if err := jsonstream.Skip(dec); err != nil {
					return err
				}
				continue
			}
			found = true
			if err := r.eventBody(ctx, dec, &ev); err != nil {
				return err
			}
		}
		if !found {
			return errNotEvent
		}
		return jsonstream.Expect(dec, '}')
	}()
	if err != nil {
		return g.BodyFailure(ctx, u, b, err)
	}
	return nil
}

func (r *reader) eventBody(ctx context.Context, dec *json.Decoder, ev *event) error {
	if err := jsonstream.Expect(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		switch key {
		case "threat_level_id":
			var level flexInt
			if err := dec.Decode(&level); err != nil {
				return err
			}
			ev.score = score(level)
		case "Tag":
			var tags []tag
			if err := dec.Decode(&tags); err != nil {
				return err
			}
			ev.tags = tagNames(tags)
		case "Attribute", "Object":
			if err := jsonstream.Expect(dec, '['); err != nil {
				return err
			}
			for dec.More() {
				var attrs []attribute
				if key == "Attribute" {
					var a attribute
					if err := dec.Decode(&a); err != nil {
						return err
					}
					attrs = []attribute{a}
				} else {
					var o object
					if err := dec.Decode(&o); err != nil {
						return err
					}
					if o.Deleted {
						continue
					}
					attrs = o.Attribute
				}
				for _, a := range attrs {
					if err := r.attribute(ctx, ev, a); err != nil {
						return &feedhttp.SinkError{Err: err}
					}
				}
			}
			if err := jsonstream.Expect(dec, ']'); err != nil {
				return err
			}
		default:
			if err := jsonstream.Skip(dec); err != nil {
				return err
			}
		}
	}
	return jsonstream.Expect(dec, '}')
}

// attribute hands over a, when it is marked for detection: the others are
// context (links, comments, the IP a report mentions in passing), not
// indicators, and are not counted.
func (r *reader) attribute(ctx context.Context, ev *event, a attribute) error {
	if !a.ToIDs || a.Deleted {
		return nil
	}
	r.position++
	kind, raw, port, reason := mapType(a.Type, a.Value)
	if reason != "" {
		r.sink.Rejected(r.position, reason)
		return nil
	}
	value, err := ioc.Normalize(kind, raw)
	if err != nil {
		r.sink.Rejected(r.position, fmt.Sprintf("%s: %v", a.Type, err))
		return nil
	}
	tags := ev.tags
	if port != "" {
		tags = addTag(append([]string(nil), tags...), "port:"+port)
	}
	return r.sink.Indicator(ctx, ioc.Indicator{Kind: kind, Value: value, Source: sourceName, Score: ev.score, Tags: tags})
}

// mapType gives the kind of a MISP attribute type, the raw value to
// normalise and the port it named, or why the attribute is skipped.
func mapType(typ, v string) (kind ioc.Kind, raw, port, reason string) {
	v = strings.TrimSpace(v)
	switch typ {
	case "ip-src", "ip-dst":
		if ap, err := netip.ParseAddrPort(v); err == nil {
			return ioc.IP, ap.Addr().String(), strconv.Itoa(int(ap.Port())), ""
		}
		return ioc.IP, v, "", ""
	case "ip-src|port", "ip-dst|port":
		// The port follows the last "|": unambiguous for IPv6 too.
		i := strings.LastIndexByte(v, '|')
		if i < 0 {
			return "", "", "", fmt.Sprintf("%s: %q has no |port", typ, v)
		}
		p, err := strconv.ParseUint(v[i+1:], 10, 16)
		if err != nil || p == 0 {
			return "", "", "", fmt.Sprintf("%s: %q has no valid port", typ, v)
		}
		return ioc.IP, v[:i], strconv.FormatUint(p, 10), ""
	case "domain", "hostname":
		return ioc.Domain, v, "", ""
	case "url":
		return ioc.URL, v, "", ""
	case "md5", "sha1", "sha256":
		return hashKind(typ, v), v, "", ""
	case "filename|md5", "filename|sha1", "filename|sha256":
		// A file name may hold "|", a hash never does.
		i := strings.LastIndexByte(v, '|')
		return hashKind(strings.TrimPrefix(typ, "filename|"), v[i+1:]), v[i+1:], "", ""
	case "link":
		return "", "", "", "skipped: link is a reference, not an indicator"
	}
	return "", "", "", fmt.Sprintf("skipped: %s is not a kind tifeeds keeps", typ)
}

// hashKind is the kind a hash's length says, whatever the type claims;
// another length keeps the labelled kind, which Normalize then refuses.
func hashKind(typ, v string) ioc.Kind {
	if kind, ok := ioc.HashKind(v); ok {
		return kind
	}
	return ioc.Kind(typ)
}
