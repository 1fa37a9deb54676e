package vendortest

import (
	"io"
	"net/http"
	"testing"
)

func TestMirrorLayout(t *testing.T) {
	s := New(t)
	s.Handle("openphish.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Host+" "+r.URL.Path+"?"+r.URL.RawQuery)
	}))
	resp, err := MirrorClient(s.URL).Get("https://openphish.com/feed.txt?a=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "openphish.com /feed.txt?a=1" {
		t.Errorf("vendor saw %q", body)
	}
	resp, err = MirrorClient(s.URL).Get("https://unknown.example/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown host: %d, want 404", resp.StatusCode)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests recorded, want 2", n)
	}
}
