package taxii

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// errEnvelope is the sentinel behind every malformed envelope.
var errEnvelope = errors.New("malformed TAXII envelope")

// envelopeInfo is what an envelope says besides its objects.
type envelopeInfo struct {
	More    bool
	Next    string
	Objects int64 // number of elements of "objects"
}

// decodeEnvelope reads one TAXII 2.1 envelope ({"more", "next", "objects"})
// from r and calls each for every element of "objects" as soon as it is
// decoded, so no more than one object is held in memory at a time. An object
// that is valid JSON but has a field of the wrong type is passed with a
// non-nil decoding error and a nil object: it is the caller's to reject. Any
// other error of each stops decoding and is returned as it is; JSON that is
// not an envelope yields an error wrapping errEnvelope, and a JSON value
// (an object, a string...) of more than maxValue bytes, when maxValue > 0,
// one wrapping errValueTooLarge.
func decodeEnvelope(r io.Reader, maxValue int64, each func(o *stixObject, decodeErr error) error) (envelopeInfo, error) {
	if maxValue <= 0 {
		return decodeEnvelopeFrom(json.NewDecoder(r), each)
	}
	lim := &valueLimiter{r: r, max: maxValue}
	lim.dec = json.NewDecoder(lim)
	info, err := decodeEnvelopeFrom(lim.dec, each)
	if lim.exceeded {
		return info, fmt.Errorf("%w: a JSON value of the envelope is larger than %d bytes", errValueTooLarge, maxValue)
	}
	return info, err
}

func decodeEnvelopeFrom(dec *json.Decoder, each func(o *stixObject, decodeErr error) error) (envelopeInfo, error) {
	var info envelopeInfo
	if err := expectDelim(dec, '{'); err != nil {
		return info, err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return info, fmt.Errorf("%w: %v", errEnvelope, err)
		}
		key, _ := t.(string)
		switch key {
		case "more":
			var more *bool
			if err := dec.Decode(&more); err != nil {
				return info, fmt.Errorf("%w: \"more\": %v", errEnvelope, err)
			}
			info.More = more != nil && *more
		case "next":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return info, fmt.Errorf("%w: \"next\": %v", errEnvelope, err)
			}
			next, err := decodeNext(raw)
			if err != nil {
				return info, err
			}
			info.Next = next
		case "objects":
			if err := decodeObjects(dec, &info, each); err != nil {
				return info, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return info, fmt.Errorf("%w: %q: %v", errEnvelope, key, err)
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return info, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return info, fmt.Errorf("%w: data after the envelope", errEnvelope)
	}
	return info, nil
}

// decodeNext accepts the string TAXII 2.1 specifies and, leniently, a
// number or null.
func decodeNext(raw json.RawMessage) (string, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == nil {
			return "", nil
		}
		return *s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("%w: \"next\" is not a string", errEnvelope)
}

func decodeObjects(dec *json.Decoder, info *envelopeInfo, each func(*stixObject, error) error) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: \"objects\": %v", errEnvelope, err)
	}
	if t == nil {
		return nil
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%w: \"objects\" is not a list", errEnvelope)
	}
	for dec.More() {
		info.Objects++
		var o stixObject
		err := dec.Decode(&o)
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			// The decoder has consumed the whole value; the stream stays usable.
			err = each(nil, err)
		case err != nil:
			return fmt.Errorf("%w: object %d: %v", errEnvelope, info.Objects, err)
		default:
			err = each(&o, nil)
		}
		if err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", errEnvelope, err)
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: expected %q, found %v", errEnvelope, want, t)
	}
	return nil
}
