package graph

import (
	"errors"
	"strconv"

	"github.com/tifeeds/tifeeds/store"
)

// parseID reads a numeric id argument, naming the argument when it is not one.
func parseID(field, id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, store.Invalid(field, "%q is not a valid id", id)
	}
	return n, nil
}

var errNotImplemented = errors.New("not implemented yet")
