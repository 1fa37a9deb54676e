package allowlist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tifeeds/tifeeds/ioc"
)

// Action is what a warninglist does to the indicators it matches. The
// strings are stored.
type Action string

// The actions of a warninglist.
const (
	// Drop: the indicator is not stored (a run counts it as rejected, with
	// the list and entry), and stored ones are removed.
	Drop Action = "drop"
	// Flag: the indicator is stored and carries a warning naming the list
	// and entry; exports may leave it out.
	Flag Action = "flag"
	// Off: the list is not applied.
	Off Action = "off"
)

// ParseAction reads an action as stored.
func ParseAction(s string) (Action, bool) {
	switch a := Action(s); a {
	case Drop, Flag, Off:
		return a, true
	}
	return "", false
}

// The types of a warninglist: MISP's five, and Mixed for a plain-text list
// whose entries each have their own.
const (
	TypeCIDR      = "cidr"
	TypeHostname  = "hostname"
	TypeString    = "string"
	TypeSubstring = "substring"
	TypeRegex     = "regex"
	TypeMixed     = "mixed"
)

// Bounds of one warninglist, so that no list can stall ingestion: a value
// is matched against every substring and regular expression of the lists
// of its kind, and RE2 runs in time linear in the value and the program.
const (
	MaxListEntries     = 1_000_000
	MaxSubstrings      = 10_000  // entries of a substring list
	MaxRegexes         = 1_000   // entries of a regex list
	MaxRegexLen        = 1_000   // bytes of one expression
	MaxRegexProgram    = 5_000   // instructions of one compiled expression
	MaxRegexListProgam = 100_000 // instructions of a list's expressions together
	MaxListNameLen     = 64
)

// ErrInvalidList is wrapped by every error of ParseMISP and ParseText.
var ErrInvalidList = errors.New("invalid warninglist")

// Warninglist describes one list: MISP's fields, the kinds of indicator it
// applies to, and where it comes from.
type Warninglist struct {
	Name        string
	Description string
	Version     int64
	Type        string
	Entries     int
	// Kinds are the indicator kinds the list applies to; empty when none of
	// its matching attributes names a kind of ours (NoKinds says why).
	Kinds   []ioc.Kind
	NoKinds string
	Builtin bool
	// Default is a built-in list's action until root changes it.
	Default Action

	kinds kindSet
	// urlHosts: the list's names also match the hosts of URL indicators.
	urlHosts bool
	// exactNames: names match only themselves and their www. form, not
	// the names below them (the site rankings; see builtin.go).
	exactNames bool
}

// MatchedKinds are the kinds of indicator the list can match: its Kinds,
// and URLs when it matches their hosts (a list of domains).
func (l *Warninglist) MatchedKinds() []ioc.Kind {
	k := l.kinds
	if l.urlHosts {
		k |= kindBits[ioc.URL]
	}
	return k.list()
}

// Parsed is a list with its entries, as ParseMISP and ParseText return it.
type Parsed struct {
	List *Warninglist
	// Skipped counts the entries that were not understood (a MISP list
	// holding a port, a wildcard), left out rather than refusing the list.
	Skipped int
	entries []wentry
}

type entryType uint8

const (
	entryPrefix    entryType = iota // an address or a CIDR range
	entryName                       // a host name and the names below it
	entryBelow                      // the names below a host name only (".example.org")
	entryExact                      // a value equal to it (names: or its www. form)
	entrySubstring                  // a value containing it
	entryRegex                      // a value it matches
)

// wentry is one entry, small: an own list may hold a million.
type wentry struct {
	value string // as reported in a warning; a prefix's address or range; a regex as listed
	typ   entryType
}

// kindSet is a set of ioc.Kinds, one bit each.
type kindSet uint16

var kindBits = map[ioc.Kind]kindSet{ioc.IP: 1, ioc.Domain: 2, ioc.URL: 4, ioc.MD5: 8, ioc.SHA1: 16, ioc.SHA256: 32, ioc.CertSHA1: 64}

func (s kindSet) has(k ioc.Kind) bool { return s&kindBits[k] != 0 }

func (s kindSet) list() []ioc.Kind {
	var out []ioc.Kind
	for _, k := range []ioc.Kind{ioc.IP, ioc.Domain, ioc.URL, ioc.MD5, ioc.SHA1, ioc.SHA256, ioc.CertSHA1} {
		if s.has(k) {
			out = append(out, k)
		}
	}
	return out
}

// attributeKinds maps MISP attribute types to our kinds. Hosts of URLs
// count as hosts: a list of names that applies to domains applies to the
// hosts of URLs too (see Set).
var attributeKinds = map[string]kindSet{
	"ip-src": 1, "ip-dst": 1, "ip-src|port": 1, "ip-dst|port": 1, "domain|ip": 1 | 2,
	"domain": 2, "hostname": 2, "hostname|port": 2,
	"url": 4, "uri": 4, "link": 4,
	"md5": 8, "filename|md5": 8,
	"sha1": 16, "filename|sha1": 16,
	"sha256": 32, "filename|sha256": 32,
	"x509-fingerprint-sha1": 64,
}

// mispList is MISP's warninglist format (its schema.json).
type mispList struct {
	Name               string      `json:"name"`
	Description        string      `json:"description"`
	Version            json.Number `json:"version"`
	Type               string      `json:"type"`
	List               []string    `json:"list"`
	MatchingAttributes []string    `json:"matching_attributes"`
}

// ParseMISP reads a MISP warninglist document (list.json). An own list has
// its CIDR ranges no wider than MinBits4 and MinBits6; built-in lists are
// trusted data.
func ParseMISP(data []byte, own bool) (*Parsed, error) {
	var m mispList
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: not a MISP warninglist document: %v", ErrInvalidList, err)
	}
	if m.Name == "" || m.Type == "" || m.List == nil {
		return nil, fmt.Errorf("%w: a MISP warninglist has a name, a type and a list", ErrInvalidList)
	}
	if len(m.List) > MaxListEntries {
		return nil, fmt.Errorf("%w: %d entries, at most %d", ErrInvalidList, len(m.List), MaxListEntries)
	}
	l := &Warninglist{Name: m.Name, Description: m.Description, Type: m.Type}
	if m.Version != "" {
		v, err := m.Version.Int64()
		if err != nil {
			return nil, fmt.Errorf("%w: version %q is not an integer", ErrInvalidList, m.Version)
		}
		l.Version = v
	}
	var ignored []string
	for _, a := range m.MatchingAttributes {
		if k, ok := attributeKinds[a]; ok {
			l.kinds |= k
		} else {
			ignored = append(ignored, a)
		}
	}
	if len(m.MatchingAttributes) == 0 {
		// MISP applies such a list to every attribute; ours by its type.
		switch m.Type {
		case TypeCIDR:
			l.kinds = kindBits[ioc.IP]
		case TypeHostname:
			l.kinds = kindBits[ioc.Domain] | kindBits[ioc.URL]
		default:
			l.kinds = ^kindSet(0) & 127
		}
	}
	if l.kinds == 0 {
		l.NoKinds = "its matching attributes (" + strings.Join(ignored, ", ") + ") name no kind of indicator tifeeds stores"
	}
	l.urlHosts = l.kinds.has(ioc.Domain) || l.kinds.has(ioc.URL)
	p := &Parsed{List: l}
	program := 0
	for _, raw := range m.List {
		e, ok, err := parseMISPEntry(m.Type, raw, own)
		if err != nil {
			return nil, err
		}
		if !ok {
			p.Skipped++
			continue
		}
		if e.typ == entryRegex {
			program += progSize(regexExpr(e.value))
			if program > MaxRegexListProgam {
				return nil, fmt.Errorf("%w: its regular expressions compile to more than %d instructions together", ErrInvalidList, MaxRegexListProgam)
			}
		}
		p.entries = append(p.entries, e)
	}
	switch m.Type {
	case TypeSubstring:
		if len(p.entries) > MaxSubstrings {
			return nil, fmt.Errorf("%w: %d substrings, at most %d", ErrInvalidList, len(p.entries), MaxSubstrings)
		}
	case TypeRegex:
		if len(p.entries) > MaxRegexes {
			return nil, fmt.Errorf("%w: %d regular expressions, at most %d", ErrInvalidList, len(p.entries), MaxRegexes)
		}
	}
	l.Entries = len(p.entries)
	return p, nil
}

// parseMISPEntry reads one entry of a list of type typ; ok is false for an
// entry to skip.
func parseMISPEntry(typ, raw string, own bool) (e wentry, ok bool, err error) {
	v := strings.TrimSpace(raw)
	if v == "" || len(v) > ioc.MaxValueLen || !utf8.ValidString(v) {
		return e, false, nil
	}
	switch typ {
	case TypeCIDR:
		p, err := parsePrefix(v)
		if err != nil || p.Addr().Zone() != "" {
			return e, false, nil
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-map[bool]int{true: 96}[p.Addr().Is4In6()]).Masked()
		if own && (p.Addr().Is4() && p.Bits() < MinBits4 || p.Addr().Is6() && p.Bits() < MinBits6) {
			return e, false, fmt.Errorf("%w: %s is wider than /%d (IPv4) or /%d (IPv6)", ErrInvalidList, p, MinBits4, MinBits6)
		}
		return wentry{typ: entryPrefix, value: entryText(p)}, true, nil
	case TypeHostname:
		t := entryName
		if strings.HasPrefix(v, ".") {
			t, v = entryBelow, v[1:]
		}
		n, ok := hostName(v)
		if !ok {
			return e, false, nil
		}
		shown := n
		if t == entryBelow {
			shown = "." + n
		}
		return wentry{typ: t, value: shown}, true, nil
	case TypeString:
		return wentry{typ: entryExact, value: exactKey(v)}, true, nil
	case TypeSubstring:
		return wentry{typ: entrySubstring, value: strings.ToLower(v)}, true, nil
	case TypeRegex:
		if _, err := compileRegex(v); err != nil {
			return e, false, err
		}
		return wentry{typ: entryRegex, value: v}, true, nil
	}
	return e, false, fmt.Errorf("%w: unknown type %q (cidr, hostname, string, substring or regex)", ErrInvalidList, typ)
}

// hostName lower-cases a host name and checks it is one (a single label,
// such as a top-level domain, is one too).
func hostName(v string) (string, bool) {
	v = strings.ToLower(strings.TrimSuffix(v, "."))
	if v == "" || strings.ContainsAny(v, " /:*@") {
		return "", false
	}
	if n, err := ioc.Normalize(ioc.Domain, v); err == nil {
		return n, true
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", false
		}
	}
	return v, true
}

// exactKey is the key of a string entry: lower-case (hosts and hashes
// compare so), an address in its canonical form, a name without "www.".
func exactKey(v string) string {
	if a, err := netip.ParseAddr(v); err == nil {
		return a.Unmap().String()
	}
	if strings.Contains(v, "://") {
		if u, err := ioc.Normalize(ioc.URL, v); err == nil {
			return u
		}
		return v
	}
	return strings.TrimPrefix(strings.ToLower(v), "www.")
}

// compileRegex reads a MISP regular expression, "/expr/flags" (PCRE's
// form; flag i is honoured, the others mean nothing to a match) or a bare
// expression, with RE2: no back-references, time linear in the input. An
// expression longer than MaxRegexLen or compiling to more than
// MaxRegexProgram instructions is refused.
func compileRegex(v string) (*regexp.Regexp, error) {
	if len(v) > MaxRegexLen {
		return nil, fmt.Errorf("%w: a regular expression longer than %d bytes", ErrInvalidList, MaxRegexLen)
	}
	expr := regexExpr(v)
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a regular expression RE2 accepts: %v", ErrInvalidList, v, err)
	}
	if n := progSize(expr); n > MaxRegexProgram {
		return nil, fmt.Errorf("%w: %q compiles to %d instructions, at most %d", ErrInvalidList, v, n, MaxRegexProgram)
	}
	return re, nil
}

// regexExpr is the RE2 expression of a MISP entry: "/expr/i" is
// "(?i)expr".
func regexExpr(v string) string {
	if strings.HasPrefix(v, "/") {
		if i := strings.LastIndexByte(v, '/'); i > 0 {
			expr := v[1:i]
			if strings.Contains(v[i+1:], "i") {
				expr = "(?i)" + expr
			}
			return expr
		}
	}
	return v
}

// progSize is how many instructions RE2 compiles expr to (regexp does not
// say): a measure of the work per byte matched.
func progSize(expr string) int {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}

// ParseText reads a plain-text list, one entry a line ("#" starts a
// comment), each of its own type: an address or CIDR range, a host name
// (covering the names below it; ".example.org" covers only those), a URL
// (equal URLs) or an MD5, SHA-1 or SHA-256 hash. A line that is none of
// them is refused with its number.
func ParseText(name string, data []byte) (*Parsed, error) {
	l := &Warninglist{Name: name, Type: TypeMixed}
	p := &Parsed{List: l}
	for i := 0; len(data) > 0; i++ {
		// Line by line, without a copy of the whole content.
		raw := data
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			raw, data = data[:j], data[j+1:]
		} else {
			data = nil
		}
		if j := bytes.IndexByte(raw, '#'); j >= 0 {
			raw = raw[:j]
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		v := string(raw)
		if len(p.entries) >= MaxListEntries {
			return nil, fmt.Errorf("%w: more than %d entries", ErrInvalidList, MaxListEntries)
		}
		e, kinds, err := textEntry(v)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrInvalidList, i+1, err)
		}
		l.kinds |= kinds
		p.entries = append(p.entries, e)
	}
	l.urlHosts = l.kinds.has(ioc.Domain)
	l.Entries = len(p.entries)
	return p, nil
}

func textEntry(v string) (wentry, kindSet, error) {
	if k, ok := ioc.HashKind(v); ok {
		if h, err := ioc.Normalize(k, v); err == nil {
			return wentry{typ: entryExact, value: h}, kindBits[k], nil
		}
	}
	if strings.HasPrefix(v, ".") {
		n, err := ioc.Normalize(ioc.Domain, v[1:])
		if err != nil {
			return wentry{}, 0, fmt.Errorf("%q is not a host name", v)
		}
		return wentry{typ: entryBelow, value: "." + n}, kindBits[ioc.Domain], nil
	}
	kind, norm, err := ParseEntry(v)
	if err != nil {
		return wentry{}, 0, fmt.Errorf("%q is not an IP address, a CIDR range, a host name, a URL or an MD5, SHA-1 or SHA-256 hash", v)
	}
	switch kind {
	case EntryIP, EntryCIDR:
		p, _ := parsePrefix(norm)
		return wentry{typ: entryPrefix, value: entryText(p)}, kindBits[ioc.IP], nil
	case EntryDomain:
		return wentry{typ: entryName, value: norm}, kindBits[ioc.Domain], nil
	}
	// A URL: ParseEntry added "/" to a bare origin; the list holds URLs.
	u, err := ioc.Normalize(ioc.URL, v)
	if err != nil {
		return wentry{}, 0, fmt.Errorf("%q is not a URL: %v", v, err)
	}
	return wentry{typ: entryExact, value: u}, kindBits[ioc.URL], nil
}

// CheckName checks the name of an own list.
func CheckName(name string) error {
	if name == "" || len(name) > MaxListNameLen {
		return fmt.Errorf("%w: a name of 1 to %d characters", ErrInvalidList, MaxListNameLen)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.", c)) {
			return fmt.Errorf("%w: a name of letters, digits, '-', '_' and '.'", ErrInvalidList)
		}
	}
	return nil
}

// Parse reads an own list: a MISP warninglist document (JSON, its name
// replaced by name) or plain text.
func Parse(name string, content []byte) (*Parsed, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	var p *Parsed
	var err error
	if t := strings.TrimSpace(string(content[:min(len(content), 64)])); strings.HasPrefix(t, "{") {
		p, err = ParseMISP(content, true)
	} else {
		p, err = ParseText(name, content)
	}
	if err != nil {
		return nil, err
	}
	p.List.Name = name
	p.List.Kinds = p.List.kinds.list()
	return p, nil
}

// lists32 names the lists of one index entry: one list's id, or (high bit
// set) an index into groups.more when the entry is on several lists.
type lists32 uint32

const manyLists = 1 << 31

type groups struct{ more [][]uint16 }

func (g *groups) add(cur lists32, present bool, id uint16) lists32 {
	if !present {
		return lists32(id)
	}
	if cur&manyLists == 0 {
		if uint16(cur) == id {
			return cur
		}
		g.more = append(g.more, []uint16{uint16(cur), id})
		return lists32(len(g.more)-1) | manyLists
	}
	ids := g.more[cur&^manyLists]
	if !slices.Contains(ids, id) {
		g.more[cur&^manyLists] = append(ids, id)
	}
	return cur
}

func (g *groups) each(v lists32, fn func(id uint16) bool) bool {
	if v&manyLists == 0 {
		return fn(uint16(v))
	}
	for _, id := range g.more[v&^manyLists] {
		if !fn(id) {
			return false
		}
	}
	return true
}
