package taxiisrv

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/stix"
	"github.com/tifeeds/tifeeds/store"
)

// Page sizes of objects and manifest: limit defaults to DefaultLimit and is
// lowered to MaxLimit (TAXII 2.1 section 3.4: the server may return fewer).
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
)

// maxMatchValues bounds the values of one match[...] parameter.
const maxMatchValues = 100

var errBadQuery = errors.New("bad query")

func badQuery(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadQuery, fmt.Sprintf(format, args...))
}

// filter is what objects, manifest and versions requests select.
type filter struct {
	after    store.ChangeKey // from added_after and next, the later
	limit    int
	none     bool            // match[type] or match[spec_version] excludes every indicator
	ids      map[string]bool // match[id]; nil: any
	versions []int64         // match[version] timestamps (µs); nil with anyVersion
	anyVer   bool
	// noWarnings (warnings=exclude, tifeeds' own parameter) leaves out the
	// indicators a flagging warninglist matches.
	noWarnings bool
}

// parseFilter reads the parameters of TAXII 2.1 section 3.5; paged is false
// for the versions endpoint, which takes no match[type] or match[id].
func parseFilter(q url.Values, paged bool) (filter, error) {
	f := filter{limit: DefaultLimit, anyVer: true}
	if v := q.Get("added_after"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, badQuery("added_after %q is not an RFC 3339 timestamp", v)
		}
		// Strictly after t: every IoC of t's microsecond, or before it.
		f.after = store.ChangeKey{At: floorMicros(t), ID: math.MaxInt64}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return f, badQuery("limit %q is not a positive integer", v)
		}
		f.limit = min(n, MaxLimit)
	}
	if v := q.Get("next"); v != "" {
		k, err := parseNext(v)
		if err != nil {
			return f, err
		}
		if cmpKey(k, f.after) > 0 {
			f.after = k
		}
	}
	switch q.Get("warnings") {
	case "", "include":
	case "exclude":
		f.noWarnings = true
	default:
		return f, badQuery("warnings %q is neither include nor exclude", q.Get("warnings"))
	}
	if paged {
		if vs, ok := matchValues(q, "type"); ok && !contains(vs, "indicator") {
			f.none = true
		}
		if vs, ok := matchValues(q, "id"); ok {
			f.ids = make(map[string]bool, len(vs))
			for _, v := range vs {
				f.ids[v] = true
			}
		}
	}
	if vs, ok := matchValues(q, "spec_version"); ok && !contains(vs, stix.SpecVersion) {
		f.none = true
	}
	if vs, ok := matchValues(q, "version"); ok {
		f.anyVer = false
		for _, v := range vs {
			switch v {
			case "last", "first", "all":
				// tifeeds keeps one version of an object, the last.
				f.anyVer = true
			default:
				t, err := time.Parse(time.RFC3339Nano, v)
				if err != nil {
					return f, badQuery("match[version] %q is neither last, first, all nor a timestamp", v)
				}
				f.versions = append(f.versions, floorMicros(t))
			}
		}
	}
	for k := range q {
		if strings.HasPrefix(k, "match[") && len(q[k]) > 0 {
			if n := len(strings.Split(strings.Join(q[k], ","), ",")); n > maxMatchValues {
				return f, badQuery("%s has %d values; at most %d", k, n, maxMatchValues)
			}
		}
	}
	return f, nil
}

func floorMicros(t time.Time) int64 {
	us := t.UnixMicro()
	if t.Before(time.UnixMicro(us)) {
		us-- // UnixMicro rounds towards zero before 1970
	}
	return us
}

// matchValues is the comma-separated values of match[field], if given.
func matchValues(q url.Values, field string) ([]string, bool) {
	raw, ok := q["match["+field+"]"]
	if !ok {
		return nil, false
	}
	var out []string
	for _, r := range raw {
		for _, v := range strings.Split(r, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out, true
}

func contains(vs []string, want string) bool {
	for _, v := range vs {
		if v == want {
			return true
		}
	}
	return false
}

// keep reports whether a row passes the filters checked per object.
func (f filter) keep(id string, changedAt int64) bool {
	if f.ids != nil && !f.ids[id] {
		return false
	}
	if f.anyVer {
		return true
	}
	for _, v := range f.versions {
		if v == changedAt {
			return true
		}
	}
	return false
}

// perObject reports whether keep can refuse a row: the page is then read
// in chunks until it fills, not with one bounded query.
func (f filter) perObject() bool { return f.ids != nil || !f.anyVer || f.noWarnings }

// The next token is the key of the last object of the page, in hex: opaque
// to clients, and good for as long as the store lives, since keys only grow.
func formatNext(k store.ChangeKey) string {
	return strconv.FormatInt(k.At, 16) + "-" + strconv.FormatInt(k.ID, 16)
}

func parseNext(s string) (store.ChangeKey, error) {
	at, id, ok := strings.Cut(s, "-")
	a, err1 := strconv.ParseInt(at, 16, 64)
	i, err2 := strconv.ParseInt(id, 16, 64)
	if !ok || err1 != nil || err2 != nil || a < 0 || i < 0 {
		return store.ChangeKey{}, badQuery("next %q is not a token this server gave", s)
	}
	return store.ChangeKey{At: a, ID: i}, nil
}

func cmpKey(a, b store.ChangeKey) int {
	switch {
	case a.At != b.At:
		return cmpInt(a.At, b.At)
	default:
		return cmpInt(a.ID, b.ID)
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
