package server

import (
	"bufio"
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
// memory. It is the one CSV writer of the service: feeds.csv and iocs.csv
// both go through it.
type csvExport[T any] struct {
	rw       http.ResponseWriter
	filename string
	w        *bufio.Writer
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
	// A large buffer, so the connection is written every 64 KB, not every
	// few dozen rows.
	e.w = bufio.NewWriterSize(e.rw, 64<<10)
	header := make([]string, len(e.columns))
	for i, c := range e.columns {
		header[i] = c.Header
	}
	e.record = make([]string, len(e.columns))
	if err := writeCSVRecord(e.w, header); err != nil {
		return fmt.Errorf("server: unable to write CSV header: %w", err)
	}
	return nil
}

// Write adds one row.
func (e *csvExport[T]) Write(row T) error {
	record := e.record // writeCSVRecord keeps nothing of it
	for i, c := range e.columns {
		v := c.Value(row)
		if c.Text {
			v = neutralizeFormula(v)
		}
		record[i] = v
	}
	if err := writeCSVRecord(e.w, record); err != nil {
		return fmt.Errorf("server: unable to write CSV row: %w", err)
	}
	e.rows++

	return nil
}

// Flush sends what is buffered to the client.
func (e *csvExport[T]) Flush() error {
	err := e.w.Flush()
	if e.flusher != nil {
		e.flusher.Flush()
	}
	return err
}

// csvDelimiters are the characters that end a cell in some spreadsheet's
// reading of a CSV file: the field separators of the locales (`,`, `;`,
// tab, `|`) and line breaks.
const csvDelimiters = ",;\t|\r\n"

// csvSpecial marks csvDelimiters and the quote: a byte table, since every
// byte of every cell of a million-row export is looked up.
var csvSpecial = func() (t [256]bool) {
	for _, c := range []byte(csvDelimiters + `"`) {
		t[c] = true
	}
	return t
}()

// writeCSVRecord writes one RFC 4180 line. A cell holding the quote or any
// locale's delimiter is quoted, not only one holding a comma as
// encoding/csv does: a spreadsheet that splits on `;` would otherwise cut
// `a;=b` into two cells, the second a formula.
func writeCSVRecord(w *bufio.Writer, record []string) error {
	for i, field := range record {
		if i > 0 {
			w.WriteByte(',')
		}
		if !csvNeedsQuotes(field) {
			w.WriteString(field)
			continue
		}
		w.WriteByte('"')
		for {
			j := strings.IndexByte(field, '"')
			if j < 0 {
				break
			}
			w.WriteString(field[:j+1])
			w.WriteByte('"')
			field = field[j+1:]
		}
		w.WriteString(field)
		w.WriteByte('"')
	}
	_, err := w.WriteString("\r\n")
	return err
}

// csvNeedsQuotes: a quote or a delimiter inside, or a leading space, which
// some readers would trim.
func csvNeedsQuotes(field string) bool {
	if field != "" && field[0] == ' ' {
		return true
	}
	for i := 0; i < len(field); i++ {
		if csvSpecial[field[i]] {
			return true
		}
	}
	return false
}

// neutralizeFormula defuses a cell that a spreadsheet would run as a formula
// (OWASP CSV injection): a cell starting with = + - @ (or their full-width
// forms, which some spreadsheets read as the same), a tab or a carriage
// return gets a leading apostrophe, which spreadsheets show as text. So
// does every part after a delimiter (csvDelimiters), past its spaces: a
// reader that splits on that delimiter, or ignores the quotes, sees each
// part as a cell of its own.
func neutralizeFormula(s string) string {
	var (
		b      strings.Builder
		copied int // s[:copied] is in b
	)
	apostrophe := func(at int) {
		if b.Len() == 0 {
			b.Grow(len(s) + 4)
		}
		b.WriteString(s[copied:at])
		b.WriteByte('\'')
		copied = at
	}
	if s != "" && (s[0] == '\t' || s[0] == '\r') {
		apostrophe(0)
	}
	partStart := true
	// Bytes, not runes: the delimiters are ASCII, which no byte of a
	// multi-byte UTF-8 sequence can be.
	for i := 0; i < len(s); i++ {
		c := s[i]
		if partStart && c != ' ' {
			if startsFormula(s[i:]) {
				apostrophe(i)
			}
			partStart = false
		}
		if c != '"' && csvSpecial[c] {
			partStart = true
		}
	}
	if b.Len() == 0 {
		return s // the common cell: nothing to defuse, nothing copied
	}
	b.WriteString(s[copied:])
	return b.String()
}

func startsFormula(s string) bool {
	switch s[0] {
	case '=', '+', '-', '@':
		return true
	case 0xEF: // the first byte of U+FF0B, U+FF0D, U+FF1D, U+FF20
		for _, full := range []string{"＝", "＋", "－", "＠"} {
			if strings.HasPrefix(s, full) {
				return true
			}
		}
	}
	return false
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
