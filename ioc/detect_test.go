package ioc

import "testing"

func TestDetect(t *testing.T) {
	for name, tc := range map[string]struct {
		raw   string
		kind  Kind
		value string
	}{
		"url":             {"HTTP://Example.COM/Path?q=1", URL, "http://example.com/Path?q=1"},
		"defanged url":    {"hxxps://evil[.]example/x", URL, "https://evil.example/x"},
		"md5":             {" D41D8CD98F00B204E9800998ECF8427E ", MD5, "d41d8cd98f00b204e9800998ecf8427e"},
		"sha1":            {"da39a3ee5e6b4b0d3255bfef95601890afd80709", SHA1, "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		"sha256":          {"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", SHA256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		"ipv4":            {"203.0.113.7", IP, "203.0.113.7"},
		"defanged ipv4":   {"203.0.113[.]7", IP, "203.0.113.7"},
		"ipv6":            {"2001:DB8::1", IP, "2001:db8::1"},
		"domain":          {"Evil.Example.", Domain, "evil.example"},
		"idn domain":      {"bücher.example", Domain, "xn--bcher-kva.example"},
		"hex but 33 long": {"d41d8cd98f00b204e9800998ecf8427ea", Domain, ""},
	} {
		t.Run(name, func(t *testing.T) {
			kind, value, err := Detect(tc.raw)
			if tc.value == "" {
				if err == nil {
					t.Errorf("Detect(%q) = %s %q, want an error", tc.raw, kind, value)
				}
				return
			}
			if err != nil || kind != tc.kind || value != tc.value {
				t.Errorf("Detect(%q) = %s %q %v, want %s %q", tc.raw, kind, value, err, tc.kind, tc.value)
			}
		})
	}
	for _, bad := range []string{"", "   ", "not a domain!", "http://"} {
		if k, v, err := Detect(bad); err == nil {
			t.Errorf("Detect(%q) = %s %q, want an error", bad, k, v)
		}
	}
}
