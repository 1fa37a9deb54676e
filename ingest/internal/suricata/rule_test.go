package suricata

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	text := `alert ip [192.0.2.1,!192.0.2.9,198.51.100.0/24] any -> $HOME_NET any (msg:"ET CNC Feodo \"a;b\" x"; classtype:trojan-activity; sid:2404000; metadata:former_category X, signature_severity Major;)`
	r, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != text || r.SID != 2404000 || r.Proto != "ip" || r.Score != 80 || r.Category != "et cnc" ||
		!slices.Equal(r.Tags, []string{"et cnc", "trojan-activity"}) {
		t.Errorf("Parse = %+v", r)
	}
	if got := Addresses(r.Src); !slices.Equal(got, []string{"192.0.2.1", "198.51.100.0/24"}) {
		t.Errorf("Addresses(%q) = %v", r.Src, got)
	}
	if got := Addresses(r.Dst); len(got) != 0 {
		t.Errorf("Addresses(%q) = %v, want none", r.Dst, got)
	}
	for bad, why := range map[string]string{
		`alert tcp any any -> any 80 (msg:"x";)`:           "no sid",
		`alert tcp any any -> any 80 (sid:0;)`:             "not a positive number",
		`alert tcp any any -> any 80 (msg:"x; sid:1;)`:     "quote is not closed",
		`alert tcp any any -> any 80 (sid:1; msg:"x")`:     "does not end with ';'",
		`log tcp any any -> any 80 (sid:1;)`:               "the header is not",
		`alert tcp any any -> any 80 sid:1;`:               "no options in parentheses",
		`# alert tcp any any -> any 80 (sid:1;)`:           "the header is not",
		`alert tcp any any -> any 80 (msg:"a\";b"; sid:;)`: "not a positive number",
	} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", bad, err, why)
		}
	}
}
