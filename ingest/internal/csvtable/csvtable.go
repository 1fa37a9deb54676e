// Package csvtable reads a CSV download by column name, for the built-in
// feed sources: abuse.ch's files open with '#' comment lines, the last of
// which names the columns ("# id,dateadded,url,..."); fields are quoted,
// may hold commas ("32-bit,elf,mips,Mozi") and may follow a space after
// the comma. Columns are found by name, so a column a vendor adds breaks
// nothing. It streams: one record at a time, never the whole file.
//
//	t, err := csvtable.Open(body, "id", "url")
//	for {
//		rec, line, err := t.Next()
//		if err == io.EOF { break }
//		var pe *csv.ParseError
//		if errors.As(err, &pe) { sink.Rejected(line, "not a CSV record: "+pe.Err.Error()); continue }
//		if err != nil { return err }
//		url := t.Get(rec, "url")
//	}
package csvtable

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxCommentLine bounds a '#' line; abuse.ch's are under 200 bytes.
const MaxCommentLine = 64 << 10

// Table is a CSV file whose columns were found by name.
type Table struct {
	cr      *csv.Reader
	col     map[string]int
	skipped int // lines before the csv reader's first
}

// Open reads the comment lines of r up to the data and finds the header
// naming every required column (names compare trimmed and lower-cased):
// the last comment line that does, or else the first data line. Without
// one it fails, before any record is read.
func Open(r io.Reader, required ...string) (*Table, error) {
	br := bufio.NewReaderSize(r, MaxCommentLine)
	var header []string
	skipped := 0
	for {
		b, err := br.Peek(1)
		if err != nil || b[0] != '#' {
			break
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("a comment line is over %d KiB", MaxCommentLine>>10)
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		skipped++
		if names := headerNames(strings.TrimLeft(string(line), "# \t")); hasAll(names, required) {
			header = names
		}
	}
	t := &Table{cr: csv.NewReader(br), skipped: skipped}
	t.cr.Comment = '#'
	t.cr.FieldsPerRecord = -1
	t.cr.TrimLeadingSpace = true
	t.cr.ReuseRecord = true
	if header == nil {
		rec, err := t.cr.Read()
		if err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("no header naming the columns %s", strings.Join(required, ", "))
			}
			return nil, err
		}
		header = normalizeNames(rec)
		if !hasAll(header, required) {
			return nil, fmt.Errorf("no header naming the columns %s", strings.Join(required, ", "))
		}
	}
	t.col = map[string]int{}
	for i, n := range header {
		if _, dup := t.col[n]; !dup {
			t.col[n] = i
		}
	}
	return t, nil
}

func headerNames(line string) []string {
	cr := csv.NewReader(strings.NewReader(line))
	cr.TrimLeadingSpace = true
	cr.LazyQuotes = true
	rec, err := cr.Read()
	if err != nil {
		return nil
	}
	return normalizeNames(rec)
}

func normalizeNames(rec []string) []string {
	names := make([]string, len(rec))
	for i, n := range rec {
		names[i] = strings.ToLower(strings.TrimSpace(n))
	}
	return names
}

func hasAll(names, required []string) bool {
	for _, r := range required {
		found := false
		for _, n := range names {
			found = found || n == r
		}
		if !found {
			return false
		}
	}
	return true
}

// Next reads the next record and its line in the file (1-based). The
// record is valid until the next call. On a *csv.ParseError the line is
// the one the bad record starts on, so that the caller can reject it and
// read on; io.EOF ends the file.
func (t *Table) Next() ([]string, int64, error) {
	rec, err := t.cr.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, int64(t.skipped + pe.StartLine), err
		}
		return nil, 0, err
	}
	line, _ := t.cr.FieldPos(0)
	return rec, int64(t.skipped + line), nil
}

// Get returns the named field of rec, trimmed, with the literal "None"
// (abuse.ch's empty) as ""; "" when the column or the field is missing.
func (t *Table) Get(rec []string, name string) string {
	i, ok := t.col[name]
	if !ok || i >= len(rec) {
		return ""
	}
	v := strings.TrimSpace(rec[i])
	if v == "None" {
		return ""
	}
	return v
}
