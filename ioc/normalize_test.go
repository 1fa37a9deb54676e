package ioc

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := map[string]struct {
		kind    Kind
		raw     string
		want    string
		wantErr string // substring of the error; "" means success
	}{
		"md5 upper":            {MD5, "D41D8CD98F00B204E9800998ECF8427E", "d41d8cd98f00b204e9800998ecf8427e", ""},
		"md5 spaces trimmed":   {MD5, "  d41d8cd98f00b204e9800998ecf8427e\t", "d41d8cd98f00b204e9800998ecf8427e", ""},
		"md5 short":            {MD5, "d41d8cd98f00b204e9800998ecf8427", "", "32 hex digits"},
		"md5 non hex":          {MD5, "z41d8cd98f00b204e9800998ecf8427e", "", "hex digits only"},
		"sha1":                 {SHA1, "DA39A3EE5E6B4B0D3255BFEF95601890AFD80709", "da39a3ee5e6b4b0d3255bfef95601890afd80709", ""},
		"sha1 is not md5":      {SHA1, "d41d8cd98f00b204e9800998ecf8427e", "", "40 hex digits"},
		"sha256":               {SHA256, strings.Repeat("aB", 32), strings.Repeat("ab", 32), ""},
		"sha256 too long":      {SHA256, strings.Repeat("a", 65), "", "64 hex digits"},
		"ipv4":                 {IP, "192.0.2.1", "192.0.2.1", ""},
		"ipv4 leading zero":    {IP, "192.0.2.01", "", "not an IP address"},
		"ipv4 out of range":    {IP, "256.1.1.1", "", "not an IP address"},
		"ipv4 mapped":          {IP, "::ffff:192.0.2.1", "192.0.2.1", ""},
		"ipv6 canonical":       {IP, "2001:DB8:0:0:0:0:0:1", "2001:db8::1", ""},
		"ipv6 zone":            {IP, "fe80::1%eth0", "", "zone"},
		"ip cidr":              {IP, "192.0.2.0/24", "", "not an IP address"},
		"domain":               {Domain, "Example.COM", "example.com", ""},
		"domain trailing dot":  {Domain, "www.example.com.", "www.example.com", ""},
		"domain idn":           {Domain, "Bücher.example", "xn--bcher-kva.example", ""},
		"domain punycode kept": {Domain, "xn--bcher-kva.example", "xn--bcher-kva.example", ""},
		"domain single label":  {Domain, "localhost", "", "fully qualified"},
		"domain ipv4":          {Domain, "192.0.2.1", "", "numeric top-level"},
		"domain underscore":    {Domain, "a_b.example.com", "", "not a valid host name"},
		"domain space":         {Domain, "a b.example.com", "", "not a valid host name"},
		"domain hyphen edge":   {Domain, "-a.example.com", "", "not a valid host name"},
		"domain empty label":   {Domain, "a..example.com", "", ""},
		"domain too long":      {Domain, strings.Repeat("a", 64) + ".com", "", ""},
		"url":                  {URL, "HTTP://Example.COM/Path?Q=1", "http://example.com/Path?Q=1", ""},
		"url default port":     {URL, "https://example.com:443/x", "https://example.com/x", ""},
		"url other port":       {URL, "https://example.com:8443/x", "https://example.com:8443/x", ""},
		"url empty path":       {URL, "http://example.com", "http://example.com/", ""},
		"url idn host":         {URL, "http://Bücher.example/a", "http://xn--bcher-kva.example/a", ""},
		"url ipv6 host":        {URL, "http://[2001:DB8::1]:80/", "http://[2001:db8::1]/", ""},
		"url ipv4 host":        {URL, "http://192.0.2.1:8080/a", "http://192.0.2.1:8080/a", ""},
		"url escapes kept":     {URL, "http://example.com/a%2Fb?x=%41", "http://example.com/a%2Fb?x=%41", ""},
		"url fragment kept":    {URL, "http://example.com/#Top", "http://example.com/#Top", ""},
		"url relative":         {URL, "/path/only", "", "absolute"},
		"url no scheme":        {URL, "example.com/path", "", "absolute"},
		"url opaque":           {URL, "mailto:a@example.com", "", "absolute"},
		"url bad host":         {URL, "http://exa mple.com/", "", "not a URL"},
		"url too long":         {URL, "http://example.com/" + strings.Repeat("a", MaxValueLen), "", "longer than"},
		"rule":                 {Rule, " alert tcp any any -> any 80 (msg:\"x\";) ", "alert tcp any any -> any 80 (msg:\"x\";)", ""},
		"empty":                {Domain, "   ", "", "empty"},
		"unknown kind":         {Kind("cve"), "CVE-2024-1", "", "unknown kind"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Normalize(tc.kind, tc.raw)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("Normalize(%s, %q) = %q, want an error", tc.kind, tc.raw, got)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("error %v does not wrap ErrInvalid", err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q does not mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Normalize(%s, %q): %v", tc.kind, tc.raw, err)
			}
			if got != tc.want {
				t.Errorf("Normalize(%s, %q) = %q, want %q", tc.kind, tc.raw, got, tc.want)
			}
			again, err := Normalize(tc.kind, got)
			if err != nil || again != got {
				t.Errorf("not idempotent: Normalize(%q) = %q, %v", got, again, err)
			}
		})
	}
}

func TestParseKind(t *testing.T) {
	for _, k := range Kinds {
		got, err := ParseKind(string(k))
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	for _, bad := range []string{"", "URL", "md5-hash", "ipv4"} {
		if _, err := ParseKind(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseKind(%q) error = %v, want ErrInvalid", bad, err)
		}
	}
}

// FuzzNormalize checks that Normalize never panics and that its output is
// a fixed point: normalising a normalised value changes nothing.
func FuzzNormalize(f *testing.F) {
	seeds := []string{
		"http://Example.com:80/a?b#c", "https://[::FFFF:1.2.3.4]:443", "Bücher.example.", "xn--bcher-kva.example",
		"1.2.3.4", "::1", "D41D8CD98F00B204E9800998ECF8427E", "ftp://u:p@h.example:21/%7e", "http://a.b/%zz",
		"http://ex%41mple.com/", "http://a.b:/", "http://é.example/ö?ü",
	}
	for _, s := range seeds {
		for i := range Kinds {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, k uint8, raw string) {
		kind := Kinds[int(k)%len(Kinds)]
		v, err := Normalize(kind, raw)
		if err != nil {
			return
		}
		again, err := Normalize(kind, v)
		if err != nil {
			t.Fatalf("Normalize(%s, %q) = %q, which is then rejected: %v", kind, raw, v, err)
		}
		if again != v {
			t.Fatalf("Normalize(%s, %q) = %q, then %q", kind, raw, v, again)
		}
	})
}
