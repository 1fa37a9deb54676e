package allowlist_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/ioc"
)

func warnings(ws []allowlist.Warning) string {
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("%s %s %s", w.List, w.Entry, w.Action))
	}
	return strings.Join(out, "; ")
}

// TestBuiltinDefaultsFlagAndOff: the shipped lists flag what the issue
// names (cloud, VPN, dynamic DNS, URL shorteners, scanners), and the lists
// that are off neither drop nor flag.
func TestBuiltinDefaultsFlagAndOff(t *testing.T) {
	s := allowlist.NewSet(nil)
	for _, tc := range []struct {
		kind  ioc.Kind
		value string
		want  string // Warnings
	}{
		{ioc.Domain, "myhome.duckdns.org", "dynamic-dns .duckdns.org flag"},
		// A leading dot names the subdomains only.
		{ioc.Domain, "x.myhome.dynv6.net", "dynamic-dns .dynv6.net flag"},
		{ioc.URL, "http://x.duckdns.org/payload.exe", "dynamic-dns .duckdns.org flag"},
		// bit.ly itself is a top site (dropped); a URL on it flags.
		{ioc.URL, "https://bit.ly/3xYz", "url-shortener bit.ly flag"},
		{ioc.Domain, "example.com", "rfc6761 example.com flag; public-dns-hostname example.com flag"},
		{ioc.IP, "192.0.2.1", "rfc5735 192.0.2.0/24 flag"},
		{ioc.IP, "2001:db8::1", "rfc3849 2001:db8::/32 flag"},
		{ioc.IP, "198.51.100.77", "rfc5735 198.51.100.0/24 flag"},
		// automated-malware-analysis (substring) is off.
		{ioc.Domain, "app.any.run", ""},
	} {
		if got := warnings(s.Warnings(tc.kind, tc.value)); got != tc.want {
			t.Errorf("Warnings(%s, %s) = %q, want %q", tc.kind, tc.value, got, tc.want)
		}
		if _, ok := s.Match(tc.kind, tc.value); ok {
			t.Errorf("Match(%s, %s): dropped, want kept", tc.kind, tc.value)
		}
	}
	// A cloud range flags (one of AWS's).
	var aws *allowlist.Warninglist
	for _, l := range s.Lists() {
		if l.Name == "amazon-aws" {
			aws = l.Warninglist
			if l.Action != allowlist.Flag || !l.Builtin || l.Type != "cidr" || l.Entries < 1000 {
				t.Errorf("amazon-aws = %+v, %s", l.Warninglist, l.Action)
			}
		}
	}
	if aws == nil {
		t.Fatal("amazon-aws is not shipped")
	}
	if !s.Flagged(ioc.IP, "3.5.140.1") {
		t.Errorf("3.5.140.1 (AWS) is not flagged: %q", warnings(s.Matches(ioc.IP, "3.5.140.1")))
	}
	for _, l := range s.Lists() {
		if l.Action == "" || l.Default == "" {
			t.Errorf("%s has no action", l.Name)
		}
	}
}

// TestActionsChangeWhatMatches: one list's action moves it between drop,
// flag and off, without touching the others.
func TestActionsChangeWhatMatches(t *testing.T) {
	for _, tc := range []struct {
		action   allowlist.Action
		dropped  bool
		warnings string
	}{
		{allowlist.Drop, true, ""},
		{allowlist.Flag, false, "dynamic-dns .duckdns.org flag"},
		{allowlist.Off, false, ""},
	} {
		s := allowlist.NewSetWith(nil, nil, map[string]allowlist.Action{"dynamic-dns": tc.action})
		m, ok := s.Match(ioc.Domain, "a.duckdns.org")
		if ok != tc.dropped || ok && m.Reason() != "allowlisted: dynamic-dns .duckdns.org" {
			t.Errorf("%s: Match = %+v, %v", tc.action, m, ok)
		}
		if got := warnings(s.Warnings(ioc.Domain, "a.duckdns.org")); got != tc.warnings {
			t.Errorf("%s: Warnings = %q, want %q", tc.action, got, tc.warnings)
		}
		if !s.ListsCover(map[string]bool{"dynamic-dns": true}, ioc.Domain, "a.duckdns.org") {
			t.Errorf("%s: ListsCover is false", tc.action)
		}
		if _, ok := s.Match(ioc.IP, "10.0.0.1"); !ok {
			t.Errorf("%s: rfc1918 no longer drops", tc.action)
		}
	}
}

// TestEachMISPType parses a document of each of MISP's five types, as MISP
// writes them, and matches each against the kinds its matching attributes
// name.
func TestEachMISPType(t *testing.T) {
	doc := func(name, typ string, attrs []string, entries ...string) *allowlist.Parsed {
		q := func(ss []string) string {
			var out []string
			for _, s := range ss {
				out = append(out, fmt.Sprintf("%q", s))
			}
			return "[" + strings.Join(out, ",") + "]"
		}
		p, err := allowlist.ParseMISP([]byte(fmt.Sprintf(`{"name":%q,"description":"d","version":20260820,"type":%q,"list":%s,"matching_attributes":%s}`,
			name, typ, q(entries), q(attrs))), true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p.List.Default = allowlist.Flag
		return p
	}
	own := allowlist.NewIndex([]*allowlist.Parsed{
		doc("c", "cidr", []string{"ip-src", "ip-dst"}, "198.18.0.0/15", "2001:db8:5::1", "not-an-ip"),
		doc("h", "hostname", []string{"domain", "hostname"}, "Corp.Example", ".dyn.example"),
		doc("s", "string", []string{"hostname", "url", "md5", "sha256", "x509-fingerprint-sha1"},
			"www.Shop.Example", "D41D8CD98F00B204E9800998ECF8427F", "https://Files.Example/a?b=1", "0123456789abcdef0123456789abcdef01234567"),
		doc("sub", "substring", []string{"url"}, "/wp-admin/"),
		doc("re", "regex", []string{"domain"}, `/^mail[0-9]+\.corp\.test$/i`),
		doc("mail", "regex", []string{"email-src"}, `/^abuse@.*$/`),
	})
	s := allowlist.NewSetWith(nil, own, nil)
	for _, tc := range []struct {
		kind  ioc.Kind
		value string
		want  string
	}{
		// Built-in lists come first.
		{ioc.IP, "198.19.255.1", "rfc5735 198.18.0.0/15 flag; c 198.18.0.0/15 flag"},
		{ioc.IP, "2001:db8:5::1", "rfc3849 2001:db8::/32 flag; c 2001:db8:5::1 flag"},
		{ioc.IP, "100.64.0.1", ""},
		{ioc.Domain, "corp.example", "h corp.example flag"},
		{ioc.Domain, "a.b.corp.example", "h corp.example flag"},
		{ioc.URL, "https://vpn.corp.example/login", "h corp.example flag"},
		{ioc.Domain, "x.dyn.example", "h .dyn.example flag"},
		{ioc.Domain, "dyn.example", ""},
		{ioc.Domain, "shop.example", "s shop.example flag"},
		{ioc.Domain, "www.shop.example", "s shop.example flag"},
		{ioc.Domain, "a.shop.example", ""},
		{ioc.URL, "https://shop.example/cart", "s shop.example flag"},
		{ioc.MD5, "d41d8cd98f00b204e9800998ecf8427f", "s d41d8cd98f00b204e9800998ecf8427f flag"},
		{ioc.CertSHA1, "0123456789abcdef0123456789abcdef01234567", "s 0123456789abcdef0123456789abcdef01234567 flag"},
		// sha1 is not among s's attributes.
		{ioc.SHA1, "0123456789abcdef0123456789abcdef01234567", ""},
		{ioc.URL, "https://files.example/a?b=1", "s https://files.example/a?b=1 flag"},
		{ioc.URL, "http://blog.test/WP-ADMIN/x.php", "sub /wp-admin/ flag"},
		{ioc.Domain, "blog.test", ""},
		{ioc.Domain, "mail12.corp.test", `re /^mail[0-9]+\.corp\.test$/i flag`},
		{ioc.Domain, "mail.corp.test", ""},
	} {
		if got := warnings(s.Warnings(tc.kind, tc.value)); got != tc.want {
			t.Errorf("Warnings(%s, %s) = %q, want %q", tc.kind, tc.value, got, tc.want)
		}
	}
	lists := own.Lists()
	if lists[0].Entries != 2 || lists[5].NoKinds == "" || len(lists[5].Kinds) != 0 || len(lists[2].Kinds) != 5 {
		t.Errorf("lists = %+v / %+v / %+v", lists[0], lists[5], lists[2])
	}
}

// TestParseTextDetectsEachEntry: a plain-text list holds entries of every
// kind, each read as what it is.
func TestParseTextDetectsEachEntry(t *testing.T) {
	p, err := allowlist.Parse("mine", []byte("# corp\n203.0.113.0/24\n2001:db8:9::7\nintranet.example\n.dyn.example\nhttps://portal.example/login\n"+
		strings.Repeat("a", 32)+"\n"+strings.Repeat("B", 40)+"  # a tool\n"+strings.Repeat("c", 64)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.List.Entries != 8 || p.List.Type != "mixed" || len(p.List.Kinds) != 6 {
		t.Fatalf("list = %+v", p.List)
	}
	p.List.Default = allowlist.Drop
	s := allowlist.NewSetWith(nil, allowlist.NewIndex([]*allowlist.Parsed{p}), nil)
	for _, tc := range []struct {
		kind  ioc.Kind
		value string
		entry string
	}{
		{ioc.IP, "203.0.113.9", "203.0.113.0/24"},
		{ioc.IP, "2001:db8:9::7", "2001:db8:9::7"},
		{ioc.Domain, "a.intranet.example", "intranet.example"},
		{ioc.Domain, "b.dyn.example", ".dyn.example"},
		{ioc.URL, "https://portal.example/login", "https://portal.example/login"},
		{ioc.MD5, strings.Repeat("a", 32), strings.Repeat("a", 32)},
		{ioc.SHA1, strings.Repeat("b", 40), strings.Repeat("b", 40)},
		{ioc.SHA256, strings.Repeat("c", 64), strings.Repeat("c", 64)},
	} {
		m, ok := s.Match(tc.kind, tc.value)
		if !ok || m.List != "mine" || m.Entry != tc.entry {
			t.Errorf("Match(%s, %s) = %+v, %v; want mine %s", tc.kind, tc.value, m, ok, tc.entry)
		}
	}
	for _, bad := range []string{"not an entry\n", "10.0.0.0/4\n", "ftp:/x\n"} {
		if _, err := allowlist.Parse("mine", []byte("192.0.2.1\n"+bad)); !errors.Is(err, allowlist.ErrInvalidList) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("Parse(%q) error = %v, want line 2 refused", bad, err)
		}
	}
}

// TestListsAreBounded: a regular expression RE2 refuses or too large a
// program, too many substrings or entries, a range of a quarter of the
// Internet, a bad name: each is refused on import.
func TestListsAreBounded(t *testing.T) {
	misp := func(typ string, entries []string) []byte {
		var q []string
		for _, e := range entries {
			q = append(q, fmt.Sprintf("%q", e))
		}
		return []byte(fmt.Sprintf(`{"name":"x","version":1,"type":%q,"list":[%s],"matching_attributes":["domain","ip-src"]}`, typ, strings.Join(q, ",")))
	}
	many := func(n int, f string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(f, i)
		}
		return out
	}
	for name, content := range map[string][]byte{
		"backreference":  misp("regex", []string{`/(a)\1/`}),
		"large program":  misp("regex", []string{`/[a-z]{900}x{900}[0-9]{900}y{900}[a-f]{900}z{900}/`}),
		"long regex":     misp("regex", []string{"/" + strings.Repeat("a", 1001) + "/"}),
		"many regexes":   misp("regex", many(1001, "/^a%d$/")),
		"many programs":  misp("regex", many(900, "/^[a-z]{200}%d$/")),
		"many substring": misp("substring", many(10001, "s%d")),
		"wide range":     misp("cidr", []string{"64.0.0.0/2"}),
		"unknown type":   misp("glob", []string{"*.x"}),
		"not json":       []byte("{nope"),
	} {
		if _, err := allowlist.Parse("own", content); !errors.Is(err, allowlist.ErrInvalidList) {
			t.Errorf("%s: error = %v, want ErrInvalidList", name, err)
		}
	}
	for _, name := range []string{"", "a b", strings.Repeat("n", 65), "x/y"} {
		if _, err := allowlist.Parse(name, []byte("192.0.2.1\n")); !errors.Is(err, allowlist.ErrInvalidList) {
			t.Errorf("name %q: error = %v", name, err)
		}
	}
}
