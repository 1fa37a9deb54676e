package main

import "testing"

func TestParsePrefixes(t *testing.T) {
	for name, tc := range map[string]struct {
		in      string
		want    string
		wantErr bool
	}{
		"empty":            {"", "[]", false},
		"address and CIDR": {"10.0.0.1, 192.168.1.7/16", "[10.0.0.1/32 192.168.0.0/16]", false},
		"IPv4-mapped":      {"::ffff:10.0.0.1", "[10.0.0.1/32]", false},
		"IPv6":             {"fd00::/8", "[fd00::/8]", false},
		"garbage":          {"proxy.example", "", true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parsePrefixes(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tc.wantErr && fmtPrefixes(got) != tc.want {
				t.Errorf("got %v, want %s", got, tc.want)
			}
		})
	}
}

func fmtPrefixes[T interface{ String() string }](ps []T) string {
	s := "["
	for i, p := range ps {
		if i > 0 {
			s += " "
		}
		s += p.String()
	}
	return s + "]"
}
