package ioc

import "testing"

func TestMaskURL(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"query token": {"https://feeds.example/v2/a.json?key=s3cret&v=2", "https://feeds.example/v2/a.json?key=***&v=***"},
		"user info":   {"http://alice:s3cret@feeds.example/x.tsv", "http://***@feeds.example/x.tsv"},
		"plain":       {"https://feeds.example/x.tsv", "https://feeds.example/x.tsv"},
		"not a URL":   {"http://%zz/?token=s3cret", "http://%zz/?***"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := MaskURL(tc.in); got != tc.want {
				t.Fatalf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestMaskURLs(t *testing.T) {
	in := `tsv: Get "https://feeds.example/a.tsv?token=s3cret": EOF; see http://u:pw@other.example/x?k=v.`
	want := `tsv: Get "https://feeds.example/a.tsv?token=***": EOF; see http://***@other.example/x?k=***.`
	if got := MaskURLs(in); got != want {
		t.Fatalf("MaskURLs:\n got %s\nwant %s", got, want)
	}
}
