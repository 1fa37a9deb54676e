package server

import (
	"encoding/csv"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

type csvRow struct {
	name  string
	count int
}

var csvTestColumns = []csvColumn[csvRow]{
	{Key: "name", Header: "Name", Text: true, Value: func(r csvRow) string { return r.name }},
	{Key: "count", Header: "Count", Value: func(r csvRow) string { return strconv.Itoa(r.count) }},
}

func TestCSVExportQuotingAndInjection(t *testing.T) {
	rec := httptest.NewRecorder()
	e := newCSVExport(rec, "feeds export.csv", csvTestColumns)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	rows := []csvRow{
		{`plain`, 1},
		{`comma, and "quotes"`, 2},
		{"two\nlines", 3},
		{`=HYPERLINK("http://evil")`, -4},
		{`+1+2`, 5},
		{`-cmd`, 6},
		{`@SUM(A1)`, 7},
		{"\tTAB", 8},
		{`ünïcødé ✓`, 9},
	}
	for _, r := range rows {
		if err := e.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := rec.Header().Get("Content-Disposition"); got != `attachment; filename="feeds export.csv"` {
		t.Errorf("Content-Disposition = %q", got)
	}
	if got := rec.Header().Get("Content-Type"); got != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type = %q", got)
	}
	body := rec.Body.String()
	if !strings.Contains(body, "\r\n") {
		t.Error("RFC 4180 wants CRLF line ends")
	}
	if !strings.Contains(body, `"comma, and ""quotes"""`) {
		t.Errorf("quotes not doubled inside a quoted field:\n%s", body)
	}
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("output is not valid CSV: %v", err)
	}
	want := [][]string{
		{"Name", "Count"},
		{"plain", "1"},
		{`comma, and "quotes"`, "2"},
		{"two\nlines", "3"},
		{`'=HYPERLINK("http://evil")`, "-4"}, // numbers we format are not text cells
		{"'+1+2", "5"},
		{"'-cmd", "6"},
		{"'@SUM(A1)", "7"},
		{"'\tTAB", "8"},
		{"ünïcødé ✓", "9"},
	}
	if len(records) != len(want) {
		t.Fatalf("got %d records, want %d", len(records), len(want))
	}
	for i := range want {
		if strings.Join(records[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("record %d = %q, want %q", i, records[i], want[i])
		}
	}
}

func TestSelectColumns(t *testing.T) {
	cols, err := selectColumns(csvTestColumns, "count, NAME")
	if err != nil || len(cols) != 2 || cols[0].Key != "count" || cols[1].Key != "name" {
		t.Errorf("selected %v, %v", cols, err)
	}
	if cols, _ := selectColumns(csvTestColumns, ""); len(cols) != len(csvTestColumns) {
		t.Errorf("empty list should select all, got %d", len(cols))
	}
	if _, err := selectColumns(csvTestColumns, "name,bogus"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown column: %v", err)
	}
}

// TestCSVCellsInEveryLocale: spreadsheets split CSV on `,`, `;`, tab or
// `|` depending on the locale, and some importers ignore quotes. A text
// cell holding any of them is quoted, and every part between them that
// would start a formula is neutralised, not only the cell's first
// character.
func TestCSVCellsInEveryLocale(t *testing.T) {
	cases := map[string]struct{ cell, want string }{
		"after a semicolon":      {`aaa;=cmd|' /C calc'!A0`, `aaa;'=cmd|' /C calc'!A0`},
		"after a comma":          {`aaa,=cmd|' /C calc'!A0`, `aaa,'=cmd|' /C calc'!A0`},
		"after a tab":            {"aaa\t=cmd|' /C calc'!A0", "aaa\t'=cmd|' /C calc'!A0"},
		"after a bar":            {`aaa|=cmd|' /C calc'!A0`, `aaa|'=cmd|' /C calc'!A0`},
		"after spaces":           {`aaa;  +1+2`, `aaa;  '+1+2`},
		"at the start and after": {`@SUM(A1);-2;x`, `'@SUM(A1);'-2;x`},
		"after a line break":     {"a\n=1+1", "a\n'=1+1"},
		"full-width equals":      {"a;＝1+1", "a;'＝1+1"},
		"empty parts":            {`;;=x;`, `;;'=x;`},
		"a semicolon alone":      {`x;y`, `x;y`},
		"a bar alone":            {`x|y`, `x|y`},
		"nothing to do":          {`plain text`, `plain text`},
	}
	rec := httptest.NewRecorder()
	e := newCSVExport(rec, "x.csv", csvTestColumns)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, c := range cases {
		names = append(names, name)
		if err := e.Write(csvRow{name: c.cell, count: len(names)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	body := rec.Body.String()
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(records) != len(cases)+1 {
		t.Fatalf("not CSV (%v) or %d records:\n%s", err, len(records), body)
	}
	for i, name := range names {
		if got, want := records[i+1][0], cases[name].want; got != want {
			t.Errorf("%s: cell %q, want %q", name, got, want)
		}
	}
	for _, name := range names {
		want := cases[name].want
		quoted := `"` + strings.ReplaceAll(want, `"`, `""`) + `"`
		if strings.ContainsAny(want, ",;\t|") && !strings.Contains(body, quoted) {
			t.Errorf("%s: cell not quoted, want %s in\n%s", name, quoted, body)
		}
	}
	// Split as an importer that ignores quotes would, on each locale's
	// delimiter: no part starts a formula.
	for _, line := range strings.FieldsFunc(body, func(r rune) bool { return r == '\r' || r == '\n' }) {
		for _, comma := range []string{",", ";", "\t", "|"} {
			for _, part := range strings.Split(line, comma) {
				if p := strings.TrimLeft(part, ` "`); p != "" && strings.ContainsAny(p[:1], "=+-@") ||
					strings.HasPrefix(p, "＝") {
					t.Errorf("split on %q: part %q of %q starts a formula", comma, part, line)
				}
			}
		}
	}
}
