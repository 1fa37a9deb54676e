package taxii

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// show renders comparisons compactly: object:path op [NOT] 'strings'.
func show(cmps []comparison) string {
	var parts []string
	for _, c := range cmps {
		s := c.Object + ":" + strings.Join(c.Path, ".")
		if c.Negated {
			s += " NOT"
		}
		s += " " + c.Op
		if len(c.Strings) > 0 {
			s += " " + strings.Join(c.Strings, ",")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

func TestParsePattern(t *testing.T) {
	tests := map[string]struct {
		pattern string
		want    string
	}{
		"ipv4": {
			`[ipv4-addr:value = '198.51.100.1']`,
			`ipv4-addr:value = 198.51.100.1`,
		},
		"double equals and spacing": {
			"[\tdomain-name:value=='a.example'\n]",
			`domain-name:value = a.example`,
		},
		"quoted hash name": {
			`[file:hashes.'SHA-256' = 'abc']`,
			`file:hashes.SHA-256 = abc`,
		},
		"bare hash names": {
			`[file:hashes.MD5 = 'a' OR file:hashes.SHA1 = 'b' OR file:hashes.SHA-256 = 'c']`,
			`file:hashes.MD5 = a | file:hashes.SHA1 = b | file:hashes.SHA-256 = c`,
		},
		"comparison AND OR with parentheses": {
			`[(ipv4-addr:value = '1.1.1.1' OR ipv4-addr:value = '2.2.2.2') AND network-traffic:dst_port = 443]`,
			`ipv4-addr:value = 1.1.1.1 | ipv4-addr:value = 2.2.2.2 | network-traffic:dst_port =`,
		},
		"observation operators and qualifiers": {
			`([url:value = 'http://a/'] FOLLOWEDBY [url:value = 'http://b/'] WITHIN 300 SECONDS) REPEATS 5 TIMES AND [domain-name:value = 'c.example'] START t'2026-01-01T00:00:00Z' STOP t'2026-02-01T00:00:00.5Z'`,
			`url:value = http://a/ | url:value = http://b/ | domain-name:value = c.example`,
		},
		"float WITHIN": {
			`[ipv4-addr:value = '1.2.3.4'] WITHIN 2.5 SECONDS`,
			`ipv4-addr:value = 1.2.3.4`,
		},
		"negation and other operators": {
			`[ipv4-addr:value NOT = '1.1.1.1' AND ipv4-addr:value != '2.2.2.2' AND ipv4-addr:value <> '3.3.3.3' AND ipv4-addr:value ISSUBSET '10.0.0.0/8' AND url:value LIKE '%x%' AND url:value MATCHES '^h' AND file:size >= 10 AND file:size < -1]`,
			`ipv4-addr:value NOT = 1.1.1.1 | ipv4-addr:value != 2.2.2.2 | ipv4-addr:value != 3.3.3.3 | ipv4-addr:value ISSUBSET 10.0.0.0/8 | url:value LIKE %x% | url:value MATCHES ^h | file:size >= | file:size <`,
		},
		"IN set": {
			`[domain-name:value IN ('a.example', 'b.example', 3)]`,
			`domain-name:value IN a.example,b.example`,
		},
		"empty IN set": {
			`[domain-name:value IN ()]`,
			`domain-name:value IN`,
		},
		"escapes in strings": {
			`[url:value = 'http://x/it\'s\\here']`,
			`url:value = http://x/it's\here`,
		},
		"list index and star": {
			`[email-message:to_refs[0].value = 'a@b' AND windows-registry-key:values[*].name = 'x' AND x:a[-1] = 'y']`,
			`email-message:to_refs.[0].value = a@b | windows-registry-key:values.[*].name = x | x:a.[-1] = y`,
		},
		"typed literals and booleans": {
			`[file:content = h'00ff' AND artifact:payload_bin = b'AAEC' AND file:created > t'2026-01-01T00:00:00Z' AND file:x = true]`,
			`file:content = | artifact:payload_bin = | file:created > | file:x =`,
		},
		"EXISTS": {
			`[EXISTS windows-registry-key:values]`,
			`windows-registry-key:values EXISTS`,
		},
		"comments": {
			"/* c */ [ipv4-addr:value = '1.2.3.4'] // trailing",
			`ipv4-addr:value = 1.2.3.4`,
		},
		"quoted first component": {
			`[x-custom:'odd name' = 'v']`,
			`x-custom:odd name = v`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parsePattern(tc.pattern)
			if err != nil {
				t.Fatalf("parsePattern: %v", err)
			}
			if s := show(got); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

func TestParsePatternErrors(t *testing.T) {
	tests := map[string]string{
		"empty":                  ``,
		"no brackets":            `ipv4-addr:value = '1.2.3.4'`,
		"unclosed bracket":       `[ipv4-addr:value = '1.2.3.4'`,
		"unterminated string":    `[ipv4-addr:value = '1.2.3.4]`,
		"bad escape":             `[url:value = 'a\nb']`,
		"missing operator":       `[ipv4-addr:value '1.2.3.4']`,
		"missing value":          `[ipv4-addr:value = ]`,
		"missing colon":          `[ipv4-addr = '1']`,
		"dangling AND":           `[ipv4-addr:value = '1.2.3.4'] AND`,
		"comparison AND outside": `[a:b = '1'] AND c:d = '2'`,
		"trailing garbage":       `[a:b = '1'] ]`,
		"bad qualifier":          `[a:b = '1'] WITHIN SECONDS`,
		"negative repeats":       `[a:b = '1'] REPEATS -2 TIMES`,
		"START without STOP":     `[a:b = '1'] START t'2026-01-01T00:00:00Z'`,
		"bad timestamp":          `[a:b = '1'] START t'yesterday' STOP t'2026-01-01T00:00:00Z'`,
		"odd hex":                `[a:b = h'0']`,
		"bad binary":             `[a:b = b'!!']`,
		"LIKE number":            `[a:b LIKE 5]`,
		"boolean order":          `[a:b > true]`,
		"lone bang":              `[a:b ! '1']`,
		"leading zero":           `[a:b = 012]`,
		"unterminated comment":   `[a:b = '1'] /* x`,
		"unknown character":      `[a:b = '1'] ;`,
		"empty observation":      `[]`,
		"lower-case and":         `[a:b = '1'] and [a:b = '2']`,
		"deep nesting":           strings.Repeat("(", 200) + `[a:b = '1']` + strings.Repeat(")", 200),
		"deep comparison nest":   "[" + strings.Repeat("(", 200) + `a:b = '1'` + strings.Repeat(")", 200) + "]",
	}
	for name, pattern := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parsePattern(pattern)
			if !errors.Is(err, errPattern) {
				t.Fatalf("parsePattern(%q) = %s, %v; want errPattern", pattern, show(got), err)
			}
		})
	}
}

// FuzzParsePattern checks that no input panics or runs away, and that what
// parses is stable: a pattern rebuilt from the comparisons of a parsed one
// parses to the same comparisons.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{
		`[ipv4-addr:value = '198.51.100.1']`,
		`[file:hashes.'SHA-256' = 'aa' AND file:hashes.MD5 = 'bb'] OR [url:value = 'http://x/']`,
		`([a:b = 1] FOLLOWEDBY [c:d IN ('x', 'y')] WITHIN 5 SECONDS) REPEATS 2 TIMES`,
		`[a:b[*].c NOT LIKE 'x%'] START t'2026-01-01T00:00:00Z' STOP t'2026-01-02T00:00:00Z'`,
		`[EXISTS a:b] AND [a:c = h'00' OR a:d = b'AA==' OR a:e = -1.5 OR a:f = true]`,
		`/* c */ [a:'x y' <> 'z'] // end`,
		`[a:b = 'it\'s']`,
		`[`, `'`, `t'`, `[a:b = 0`, `((((`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		done := make(chan struct{})
		var cmps []comparison
		var err error
		go func() {
			defer close(done)
			cmps, err = parsePattern(s)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // a hang, not a speed check
			t.Fatalf("parsePattern(%q) does not return", s)
		}
		if err != nil {
			if !errors.Is(err, errPattern) {
				t.Fatalf("parsePattern(%q) error %v does not wrap errPattern", s, err)
			}
			return
		}
		if len(cmps) == 0 {
			t.Fatalf("parsePattern(%q) accepted a pattern without comparisons", s)
		}
		var b strings.Builder
		for i, c := range cmps {
			if i > 0 {
				b.WriteString(" AND ")
			}
			fmt.Fprintf(&b, "[%s:%s", c.Object, quotePath(c.Path))
			if c.Op == "EXISTS" {
				b.Reset()
				break
			}
			b.WriteString(" = 'x']")
		}
		if b.Len() > 0 {
			again, err := parsePattern(b.String())
			if err != nil {
				t.Fatalf("rebuilt pattern %q of %q does not parse: %v", b.String(), s, err)
			}
			for i := range min(len(cmps), len(again)) {
				if again[i].Object != cmps[i].Object || !slices.Equal(again[i].Path, cmps[i].Path) {
					t.Fatalf("rebuilt pattern %q of %q reads %s:%q, not %s:%q", b.String(), s,
						again[i].Object, again[i].Path, cmps[i].Object, cmps[i].Path)
				}
			}
		}
	})
}

// quotePath prints a comparison's path. A list step is "[" index "]" as
// the parser keeps it; a quoted component may start with "[" too ('[' or
// even '[0]'), so only the exact form of a step is printed as one.
func quotePath(path []string) string {
	var b strings.Builder
	for i, p := range path {
		switch {
		case i > 0 && isListStep(p):
			b.WriteString(p)
			continue
		case i > 0:
			b.WriteString(".")
		}
		b.WriteString("'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(p) + "'")
	}
	return b.String()
}

func isListStep(p string) bool {
	if len(p) < 3 || p[0] != '[' || p[len(p)-1] != ']' {
		return false
	}
	inner := p[1 : len(p)-1]
	if inner == "*" {
		return true
	}
	_, err := strconv.ParseInt(inner, 10, 64)
	return err == nil
}
