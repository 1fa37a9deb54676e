package csvtable

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// read returns "<line> <url>|<tags>" for every record, "<line> bad" for a
// record that is not CSV.
func read(t *testing.T, tb *Table) []string {
	t.Helper()
	var out []string
	for {
		rec, line, err := tb.Next()
		if err == io.EOF {
			return out
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			out = append(out, fmt.Sprintf("%d bad", line))
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s|%s", line, tb.Get(rec, "url"), tb.Get(rec, "tags")))
	}
}

func TestTable(t *testing.T) {
	for name, tc := range map[string]struct {
		csv  string
		want []string
		err  string
	}{
		"header on the last # line naming the columns": {
			csv: "################\n# URLhaus recent\n# id,dateadded,url,tags\n#\n" +
				`"1","2026-11-02 12:00:00","http://a.example.com/","elf,mips"` + "\n",
			want: []string{"5 http://a.example.com/|elf,mips"},
		},
		"header on the first data line, names trimmed and lower-cased": {
			csv:  " ID , URL,Tags\n2,http://b.example.com/,None\n",
			want: []string{"2 http://b.example.com/|"},
		},
		"columns moved and one added": {
			csv:  "# tags,new,url,id\n\"x\", \"y\", \"http://c.example.com/\", \"3\"\n",
			want: []string{"2 http://c.example.com/|x"},
		},
		"a short record lacks its fields": {
			csv:  "# id,url,tags\n4\n5,http://d.example.com/\n",
			want: []string{"2 |", "3 http://d.example.com/|"},
		},
		"a bad record is told with its line, and reading goes on": {
			csv:  "# id,url,tags\n6,\"http://e.example.com/\"x,\n7,http://f.example.com/,t\n",
			want: []string{"2 bad", "3 http://f.example.com/|t"},
		},
		"# lines among the data are skipped": {
			csv:  "# id,url,tags\n8,http://g.example.com/,\n# a note\n9,http://h.example.com/,\n",
			want: []string{"2 http://g.example.com/|", "4 http://h.example.com/|"},
		},
		"no header naming the columns": {
			csv: "# sha1,reason\nabc,x\n", err: "no header naming the columns id, url",
		},
		"empty": {csv: "", err: "no header naming the columns id, url"},
		"a comment line over the bound": {
			csv: "# " + strings.Repeat("x", MaxCommentLine) + "\n", err: "a comment line is over 64 KiB",
		},
	} {
		t.Run(name, func(t *testing.T) {
			tb, err := Open(strings.NewReader(tc.csv), "id", "url")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := read(t, tb); !slices.Equal(got, tc.want) {
				t.Errorf("records %q, want %q", got, tc.want)
			}
		})
	}
}
