package allowlist

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"

	"github.com/tifeeds/tifeeds/ioc"
)

// Set is the warninglists (built-in and own, each with its action) and
// the user entries, read-only once built (safe for concurrent use).
//
// What each list covers:
//   - cidr lists (reserved, public-dns and MISP's): IP indicators in their
//     ranges or equal to their addresses;
//   - hostname lists: domain indicators equal to an entry or below it, and
//     the hosts of URL indicators when the list applies to domains or
//     URLs; an entry with a leading dot (".duckdns.org") covers only the
//     names below it;
//   - string lists: values equal to an entry (hashes and names compare
//     case-insensitively; a name matches its www. form too); the site
//     rankings (tranco10k, cisco_top20k, cloudflare-top100k) are matched
//     so, for domain indicators only: a subdomain of a popular hosting
//     platform and a URL on a popular site (a phishing form on a document
//     service) are real indicators;
//   - substring and regex lists: values of their kinds containing or
//     matching an entry;
//   - user IP and CIDR entries: IP indicators; user domains: domain
//     indicators equal to them or below them; user URL prefixes: URL
//     indicators that start with them.
type Set struct {
	builtin, own *Index
	// The action of each list of builtin and own, by id.
	builtinActs, ownActs []Action
	user                 *userSet
	fingerprint          string
}

// userSet is the user entries alone.
type userSet struct {
	ips   *prefixSet
	names *domainSet
	urls  *urlSet
	n     int
}

// NewSet returns the built-in lists with their default actions and the
// user entries; entries must hold values as ParseEntry returns them.
func NewSet(entries []Entry) *Set { return NewSetWith(entries, nil, nil) }

// NewSetWith returns the built-in lists, the own lists of own (nil for
// none) and the user entries, each list with the action actions names for
// it, else its default (an own list's is the action it was stored with).
func NewSetWith(entries []Entry, own *Index, actions map[string]Action) *Set {
	s := &Set{builtin: builtin(), own: own, user: newUserSet(entries)}
	s.builtinActs = actionsOf(s.builtin, actions)
	if own != nil {
		s.ownActs = actionsOf(own, actions)
	}
	h := sha256.New()
	for _, l := range s.Lists() {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00", l.Name, l.Action, l.Version, l.Entries)
	}
	if own != nil {
		fmt.Fprintf(h, "own:%d", own.gen)
	}
	s.fingerprint = hex.EncodeToString(h.Sum(nil)[:12])
	return s
}

// Fingerprint changes whenever the lists or their actions do (an own list
// replaced counts, even with the same name and size): part of the
// validators of the exports that leave flagged IoCs out.
func (s *Set) Fingerprint() string { return s.fingerprint }

func actionsOf(x *Index, actions map[string]Action) []Action {
	out := make([]Action, len(x.lists))
	for i, l := range x.lists {
		out[i] = l.Default
		if a, ok := actions[l.Name]; ok {
			out[i] = a
		}
		if out[i] == "" {
			out[i] = Off
		}
	}
	return out
}

// Warning is a list and entry that match a value, with the list's action.
type Warning struct {
	List   string
	Entry  string
	Action Action
}

// ListState is a list with its action in a Set.
type ListState struct {
	*Warninglist
	Action Action
}

// Lists returns every list of the set with its action: the built-in
// lists, then the own ones. The user entries are not among them.
func (s *Set) Lists() []ListState {
	var out []ListState
	for i, l := range s.builtin.lists {
		out = append(out, ListState{l, s.builtinActs[i]})
	}
	if s.own != nil {
		for i, l := range s.own.lists {
			out = append(out, ListState{l, s.ownActs[i]})
		}
	}
	return out
}

// Own is the index of the own lists the set was built with (nil if none).
func (s *Set) Own() *Index { return s.own }

// eachList visits the matches of lists whose action want accepts, built-in
// lists first.
func (s *Set) eachList(kind ioc.Kind, value string, want func(Action) bool, fn func(l *Warninglist, entry string, a Action) bool) {
	for _, side := range []struct {
		x    *Index
		acts []Action
	}{{s.builtin, s.builtinActs}, {s.own, s.ownActs}} {
		if side.x == nil {
			continue
		}
		x, acts := side.x, side.acts
		if !x.each(kind, value, func(id uint16) bool { return want(acts[id]) },
			func(id uint16, entry string) bool { return fn(x.lists[id], entry, acts[id]) }) {
			return
		}
	}
}

// Warnings returns the flagging lists that match the normalised value of
// kind, each once with its most specific entry; nil when none does.
func (s *Set) Warnings(kind ioc.Kind, value string) []Warning {
	var out []Warning
	s.eachList(kind, value, func(a Action) bool { return a == Flag }, func(l *Warninglist, entry string, a Action) bool {
		for _, w := range out {
			if w.List == l.Name {
				return true
			}
		}
		out = append(out, Warning{List: l.Name, Entry: entry, Action: a})
		return true
	})
	return out
}

// Flagged reports whether a flagging list matches the value.
func (s *Set) Flagged(kind ioc.Kind, value string) bool {
	found := false
	s.eachList(kind, value, func(a Action) bool { return a == Flag }, func(*Warninglist, string, Action) bool {
		found = true
		return false
	})
	return found
}

// Matches returns every list that drops or flags the value, each once, and
// the user entry that covers it (list "user", action drop).
func (s *Set) Matches(kind ioc.Kind, value string) []Warning {
	var out []Warning
	s.eachList(kind, value, func(a Action) bool { return a != Off }, func(l *Warninglist, entry string, a Action) bool {
		for _, w := range out {
			if w.List == l.Name {
				return true
			}
		}
		out = append(out, Warning{List: l.Name, Entry: entry, Action: a})
		return true
	})
	if m, ok := s.user.match(kind, value); ok {
		out = append(out, Warning{List: ListUser, Entry: m.Entry, Action: Drop})
	}
	return out
}

// ListsCover reports whether one of the lists names (built-in or own)
// matches the value, whatever their actions, in one lookup however many
// lists: it is what removing the IoCs of the lists that turned to drop
// asks of each stored IoC.
func (s *Set) ListsCover(names map[string]bool, kind ioc.Kind, value string) bool {
	found := false
	for _, x := range []*Index{s.builtin, s.own} {
		if x == nil || found {
			continue
		}
		x.each(kind, value, func(id uint16) bool { return names[x.lists[id].Name] }, func(uint16, string) bool {
			found = true
			return false
		})
	}
	return found
}

func newUserSet(entries []Entry) *userSet {
	u := &userSet{ips: newPrefixSet(), names: newDomainSet(true), n: len(entries)}
	var urls []Match
	for _, e := range entries {
		m := Match{List: ListUser, Entry: e.Value, ID: e.ID, Comment: e.Comment}
		switch e.Kind {
		case EntryIP, EntryCIDR:
			if p, err := parsePrefix(e.Value); err == nil {
				u.ips.add(p, m)
			}
		case EntryDomain:
			u.names.add(e.Value, m)
		case EntryURL:
			urls = append(urls, m)
		}
	}
	u.urls = newURLSet(urls)
	return u
}

// Match reports the entry covering the normalised value of kind among the
// dropping lists, built-in lists first, then the user entries.
func (s *Set) Match(kind ioc.Kind, value string) (Match, bool) {
	var m Match
	found := false
	s.eachList(kind, value, func(a Action) bool { return a == Drop }, func(l *Warninglist, entry string, _ Action) bool {
		m, found = Match{List: l.Name, Entry: entry}, true
		return false
	})
	if found {
		return m, true
	}
	return s.user.match(kind, value)
}

func (u *userSet) match(kind ioc.Kind, value string) (Match, bool) {
	switch kind {
	case ioc.IP:
		a, err := netip.ParseAddr(value)
		if err != nil {
			return Match{}, false
		}
		return u.ips.lookup(a)
	case ioc.Domain:
		return u.names.lookup(value)
	case ioc.URL:
		return u.urls.lookup(value)
	}
	return Match{}, false
}

// Covers reports whether the user entry e covers the normalised value of
// kind, as it does in a Set.
func (e Entry) Covers(kind ioc.Kind, value string) bool {
	_, ok := newUserSet([]Entry{e}).match(kind, value)
	return ok
}

// IndicatorKind is the kind of indicator an entry of kind k covers.
func (k EntryKind) IndicatorKind() ioc.Kind {
	switch k {
	case EntryDomain:
		return ioc.Domain
	case EntryURL:
		return ioc.URL
	}
	return ioc.IP
}

// StorePattern is a LIKE pattern (ESCAPE '\') that every stored value the
// entry covers matches, to narrow a scan of the store; Covers decides.
func (e Entry) StorePattern() string {
	esc := func(s string) string {
		return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
	}
	switch e.Kind {
	case EntryIP:
		return esc(e.Value)
	case EntryDomain:
		return "%" + esc(e.Value)
	case EntryURL:
		return esc(e.Value) + "%"
	case EntryCIDR:
		p, err := netip.ParsePrefix(e.Value)
		if err != nil || !p.Addr().Is4() {
			return "%:%"
		}
		// The leading whole octets are a text prefix of every address in
		// the range.
		octets := strings.Split(p.Addr().String(), ".")[:p.Bits()/8]
		return strings.Join(octets, ".") + ".%"
	}
	return ""
}

// UserEntries is how many user entries the set was built with.
func (s *Set) UserEntries() int { return s.user.n }

// parsePrefix reads an address or a CIDR range as a prefix.
func parsePrefix(v string) (netip.Prefix, error) {
	if strings.Contains(v, "/") {
		return netip.ParsePrefix(v)
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
