package server_test

import (
	"log/slog"
	"strconv"
	"strings"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func itoa(n int) string { return strconv.Itoa(n) }

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
