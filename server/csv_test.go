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
