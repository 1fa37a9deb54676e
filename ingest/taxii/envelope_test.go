package taxii

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
)

func TestDecodeEnvelope(t *testing.T) {
	tests := map[string]struct {
		body    string
		more    bool
		next    string
		objects int64
	}{
		"empty object":       {`{}`, false, "", 0},
		"more and next":      {`{"more": true, "next": "abc", "objects": [{"type": "x"}]}`, true, "abc", 1},
		"keys after objects": {`{"objects": [{"type": "x"}, {"type": "y"}], "next": "2", "more": true}`, true, "2", 2},
		"numeric next":       {`{"more": true, "next": 100}`, true, "100", 0},
		"null fields":        {`{"more": null, "next": null, "objects": null}`, false, "", 0},
		"unknown keys":       {`{"x": {"a": [1, {"b": 2}]}, "objects": []}`, false, "", 0},
		"trailing space":     {"{\"objects\": []}\n  ", false, "", 0},
		"wrongly typed item": {`{"objects": [{"type": 5}, 7, {"type": "x"}]}`, false, "", 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var seen int64
			info, err := decodeEnvelope(strings.NewReader(tc.body), 0, func(*stixObject, error) error { seen++; return nil })
			if err != nil {
				t.Fatalf("decodeEnvelope: %v", err)
			}
			if info.More != tc.more || info.Next != tc.next || info.Objects != tc.objects || seen != tc.objects {
				t.Errorf("info = %+v (seen %d), want more=%v next=%q objects=%d", info, seen, tc.more, tc.next, tc.objects)
			}
		})
	}
}

func TestDecodeEnvelopeErrors(t *testing.T) {
	tests := map[string]string{
		"empty":             ``,
		"not an object":     `[]`,
		"truncated":         `{"more": true, "objects": [{"type": "indicator"`,
		"objects not list":  `{"objects": {}}`,
		"more not bool":     `{"more": "yes"}`,
		"next not string":   `{"next": {}}`,
		"two envelopes":     `{} {}`,
		"garbage after":     `{}x`,
		"bad JSON in items": `{"objects": [{"type": }]}`,
		"HTML":              `<html><body>Login</body></html>`,
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := decodeEnvelope(strings.NewReader(body), 0, func(*stixObject, error) error { return nil })
			if !errors.Is(err, errEnvelope) {
				t.Fatalf("decodeEnvelope(%q) = %v, want errEnvelope", body, err)
			}
		})
	}
}

// fuzzMaxValue is small, so that fuzzing meets the value bound too.
const fuzzMaxValue = 4 << 10

// FuzzDecodeEnvelope feeds arbitrary bytes to the envelope decoder and the
// extraction behind it: no panic, no hang, and any failure is errEnvelope.
func FuzzDecodeEnvelope(f *testing.F) {
	sample, err := os.ReadFile("testdata/envelope.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample)
	for _, s := range []string{
		`{}`, `{"more": true, "next": "1", "objects": []}`,
		`{"objects": [{"type": "indicator", "pattern": "[ipv4-addr:value = '1.2.3.4']", "valid_until": "2030-01-01T00:00:00Z", "confidence": 5}]}`,
		`{"objects": [{"type": "file", "hashes": {"MD5": "x"}}, {"type": "url", "value": "http://a/"}]}`,
		`{"objects": [1, "x", null, [], {"type": null}]}`,
		`{"objects": [`, `{"more": tru`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		done := make(chan error, 1)
		sink := &recSink{}
		x := &extractor{source: "s", now: testNow, normalize: ioc.Normalize}
		go func() {
			var pos int64
			_, err := decodeEnvelope(strings.NewReader(string(body)), fuzzMaxValue, func(o *stixObject, decodeErr error) error {
				pos++
				return x.decoded(context.Background(), pos, o, decodeErr, sink)
			})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, errEnvelope) && !errors.Is(err, errValueTooLarge) {
				t.Fatalf("decodeEnvelope error %v wraps neither errEnvelope nor errValueTooLarge", err)
			}
		case <-time.After(10 * time.Second): // a hang, not a speed check
			t.Fatal("decodeEnvelope does not return")
		}
	})
}
