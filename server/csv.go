package server

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// csvColumn is one exported column: its header and how to read a row's
// cell. Text cells are neutralised against formula injection; numbers and
// dates that we format ourselves are not, so "-1" stays a number.
type csvColumn[T any] struct {
	Key    string
	Header string
	Text   bool
	Value  func(T) string
}

// csvExport streams rows as RFC 4180 CSV (UTF-8, CRLF line ends) with a
// download file name, flushing as it goes so large exports never sit in
// memory.
type csvExport[T any] struct {
	rw       http.ResponseWriter
	filename string
	w        *csv.Writer
	flusher  http.Flusher
	columns  []csvColumn[T]
	record   []string
	rows     int
}

// newCSVExport prepares an export; Start sends its headers and header row.
func newCSVExport[T any](w http.ResponseWriter, filename string, columns []csvColumn[T]) *csvExport[T] {
	e := &csvExport[T]{rw: w, filename: filename, columns: columns}
	e.flusher, _ = w.(http.Flusher)
	return e
}

// Start sends the headers and the header row.
func (e *csvExport[T]) Start() error {
	e.rw.Header().Set("Content-Type", "text/csv; charset=utf-8")
	e.rw.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": e.filename}))
	e.rw.Header().Set("X-Content-Type-Options", "nosniff")
	// A large buffer: csv.Writer's own 4 KB would write to the connection
	// every few dozen rows.
	e.w = csv.NewWriter(bufio.NewWriterSize(e.rw, 64<<10))
	e.w.UseCRLF = true
	header := make([]string, len(e.columns))
	for i, c := range e.columns {
		header[i] = c.Header
	}
	e.record = make([]string, len(e.columns))
	if err := e.w.Write(header); err != nil {
		return fmt.Errorf("server: unable to write CSV header: %w", err)
	}
	return nil
}

// Write adds one row.
func (e *csvExport[T]) Write(row T) error {
	record := e.record // csv.Writer keeps nothing of it
	for i, c := range e.columns {
		v := c.Value(row)
		if c.Text {
			v = neutralizeFormula(v)
		}
		record[i] = v
	}
	if err := e.w.Write(record); err != nil {
		return fmt.Errorf("server: unable to write CSV row: %w", err)
	}
	e.rows++

	return nil
}

// Flush sends what is buffered to the client.
func (e *csvExport[T]) Flush() error {
	e.w.Flush()
	if e.flusher != nil {
		e.flusher.Flush()
	}
	return e.w.Error()
}

// neutralizeFormula defuses a cell that a spreadsheet would run as a formula
// (OWASP CSV injection): one starting with = + - @ or a tab or carriage
// return gets a leading apostrophe, which spreadsheets show as text.
func neutralizeFormula(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// selectColumns returns the columns named in a comma-separated list, in that
// order, or all of them when the list is empty. An unknown name is an error
// naming it.
func selectColumns[T any](all []csvColumn[T], list string) ([]csvColumn[T], error) {
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	byKey := make(map[string]csvColumn[T], len(all))
	for _, c := range all {
		byKey[strings.ToLower(c.Key)] = c
	}
	var out []csvColumn[T]
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		c, ok := byKey[strings.ToLower(name)]
		if !ok {
			keys := make([]string, len(all))
			for i, c := range all {
				keys[i] = c.Key
			}
			return nil, fmt.Errorf("unknown column %q; columns are %s", name, strings.Join(keys, ", "))
		}
		out = append(out, c)
	}
	return out, nil
}
