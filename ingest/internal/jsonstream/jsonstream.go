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
