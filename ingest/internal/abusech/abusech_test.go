package abusech

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ingest/internal/csvtable"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ioc"
)

func TestTags(t *testing.T) {
	for name, tc := range map[string]struct {
		in   []string
		want []string
	}{
		"lower-cased, trimmed, spaces folded": {in: []string{" Cobalt  Strike ,ELF"}, want: []string{"cobalt strike", "elf"}},
		"None and empties are no tag":         {in: []string{"None", ",,", "none, x"}, want: []string{"x"}},
		"duplicates across lists once":        {in: []string{"rat,RAT", "rat"}, want: []string{"rat"}},
		"nothing":                             {in: nil, want: nil},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Tags(tc.in...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Tags(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

const exportCSV = `# a comment
# id,added,value
"3","2026-11-02 12:00:01 UTC","c"
"2","2026-11-02 12:00:01","b"
"","2026-11-02 12:00:00","no id"
"1","2026-11-02 12:00:00","a"
"0","yesterday","d"
"9","2026-11-01 00:00:00","skip"
`

var testExport = Export{Who: "test", File: "the export", ID: "id", Time: "added", Columns: []string{"value"}}

func value(t *csvtable.Table, rec []string) (ioc.Indicator, string) {
	v := t.Get(rec, "value")
	if v == "skip" {
		return ioc.Indicator{}, "skipped: not kept"
	}
	return ioc.Indicator{Kind: ioc.Domain, Value: v + ".example.com"}, ""
}

func TestExportRead(t *testing.T) {
	for name, tc := range map[string]struct {
		after    Mark
		since    time.Time
		want     []string
		rejected []string
		next     Mark
	}{
		"first run": {
			want:     []string{"c.example.com", "b.example.com", "a.example.com"},
			rejected: []string{"5: no id", `7: added "yesterday" is not a date`, "8: skipped: not kept"},
			next:     Mark{At: "2026-11-02 12:00:01", IDs: []string{"3", "2"}},
		},
		"first run within the backfill window": {
			since:    time.Date(2026, 11, 2, 12, 0, 1, 0, time.UTC),
			want:     []string{"c.example.com", "b.example.com"},
			rejected: []string{"5: no id", `7: added "yesterday" is not a date`},
			next:     Mark{At: "2026-11-02 12:00:01", IDs: []string{"3", "2"}},
		},
		"a new row in the mark's second": {
			after:    Mark{At: "2026-11-02 12:00:01", IDs: []string{"2"}},
			want:     []string{"c.example.com"},
			rejected: []string{"5: no id", `7: added "yesterday" is not a date`},
			next:     Mark{At: "2026-11-02 12:00:01", IDs: []string{"2", "3"}},
		},
		"a mark not ours reads as a first run": {
			after:    Mark{At: "yesterday", IDs: []string{"3"}},
			want:     []string{"c.example.com", "b.example.com", "a.example.com"},
			rejected: []string{"5: no id", `7: added "yesterday" is not a date`, "8: skipped: not kept"},
			next:     Mark{At: "2026-11-02 12:00:01", IDs: []string{"3", "2"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var rec vendortest.Recorder
			next, err := testExport.Read(context.Background(), strings.NewReader(exportCSV), tc.after, tc.since, &rec, value)
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.Values(ioc.Domain); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("values %q, want %q", got, tc.want)
			}
			if !reflect.DeepEqual(rec.Rejections, tc.rejected) {
				t.Errorf("rejections %q, want %q", rec.Rejections, tc.rejected)
			}
			if !reflect.DeepEqual(next, tc.next) {
				t.Errorf("mark %+v, want %+v", next, tc.next)
			}
		})
	}
}

// An error of the sink ends the read as a feedhttp.SinkError (never bad
// data) and leaves the mark where it was; a file without the columns is
// bad data.
func TestExportReadFailures(t *testing.T) {
	stop := errors.New("the store is down")
	after := Mark{At: "2026-11-02 12:00:00", IDs: []string{"1"}}
	next, err := testExport.Read(context.Background(), strings.NewReader(exportCSV), after, time.Time{}, &vendortest.Recorder{Fail: stop}, value)
	var se *feedhttp.SinkError
	if !errors.As(err, &se) || se.Err != stop || !reflect.DeepEqual(next, after) {
		t.Errorf("sink failure: %v, mark %+v; want a SinkError of the sink's error and %+v", err, next, after)
	}
	_, err = testExport.Read(context.Background(), strings.NewReader("# id,value\n1,a\n"), Mark{}, time.Time{}, &vendortest.Recorder{}, value)
	if ioc.FailureOf(err) != ioc.FetchingDataError || !strings.Contains(err.Error(), "test: unable to read the header of the export") {
		t.Errorf("no time column: %v, want a Fetching Data Error about the header", err)
	}
}

func TestParseCursor(t *testing.T) {
	type state struct {
		Seen string   `json:"seen,omitempty"`
		IDs  []string `json:"ids,omitempty"`
	}
	st := state{Seen: "2026-11-02 12:00:01", IDs: []string{"3"}}
	if got := ParseCursor[state](Cursor(st)); !reflect.DeepEqual(got, st) {
		t.Errorf("round trip %+v, want %+v", got, st)
	}
	for _, c := range []string{"", "2026-11-02", `{"seen":1}`} {
		if got := ParseCursor[state](c); !reflect.DeepEqual(got, state{}) {
			t.Errorf("ParseCursor(%q) = %+v, want the zero state", c, got)
		}
	}
}
