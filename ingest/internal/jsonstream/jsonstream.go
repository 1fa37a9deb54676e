// Package jsonstream holds the two token steps every streaming JSON reader
// of a feed source needs: read an expected delimiter, and pass over a value
// without holding it. Sources read vendor documents token by token so that
// a big list never sits in memory whole.
package jsonstream

import (
	"encoding/json"
	"fmt"
)

// Expect reads the next token and fails unless it is d.
func Expect(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return fmt.Errorf("found %v where %v was expected", t, d)
	}
	return nil
}

// Skip reads past the next value, however deep, without holding it.
func Skip(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// Object reads one JSON object member by member. member is called with
// each key, the decoder before its value; it reads the value whole and
// returns true, or returns false to have the value skipped unread.
func Object(dec *json.Decoder, member func(key string) (read bool, err error)) error {
	if err := Expect(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		read, err := member(key)
		if err != nil {
			return err
		}
		if !read {
			if err := Skip(dec); err != nil {
				return err
			}
		}
	}
	return Expect(dec, '}')
}

// Array reads one JSON array, decoding its elements one at a time into a
// T handed to each, so that a long array is never in memory whole.
func Array[T any](dec *json.Decoder, each func(*T) error) error {
	if err := Expect(dec, '['); err != nil {
		return err
	}
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := each(&v); err != nil {
			return err
		}
	}
	return Expect(dec, ']')
}
