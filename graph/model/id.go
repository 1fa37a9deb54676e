// Package model holds the GraphQL types that have no domain type of their own
// (inputs, connections) and the scalars' Go bindings.
package model

import (
	"fmt"
	"io"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
)

// MarshalInt64ID writes a numeric database id as a GraphQL ID string.
func MarshalInt64ID(id int64) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		io.WriteString(w, strconv.Quote(strconv.FormatInt(id, 10)))
	})
}

// UnmarshalInt64ID reads a GraphQL ID that must hold a numeric database id.
func UnmarshalInt64ID(v any) (int64, error) {
	switch v := v.(type) {
	case string:
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("id %q is not a valid id", v)
		}
		return id, nil
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	default:
		return 0, fmt.Errorf("id must be a string, not %T", v)
	}
}
