package taxii

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/ingest/taxii/taxiitest"
	"github.com/tifeeds/tifeeds/ioc"
)

func TestValidateCollectionURL(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()

	onPath := func(path string, answer func(w http.ResponseWriter)) func(*taxiitest.Server) {
		return func(s *taxiitest.Server) {
			s.Hook = func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != path {
					return false
				}
				answer(w)
				return true
			}
		}
	}
	tests := map[string]struct {
		url      func(s *taxiitest.Server) string
		setup    func(s *taxiitest.Server)
		password string
		want     ioc.FailureKind // "" for valid
		message  string          // substring of the error
	}{
		"valid": {},
		"valid without trailing slash": {
			url: func(s *taxiitest.Server) string { return strings.TrimSuffix(s.CollectionURL(collID), "/") },
		},
		"valid with relative api_roots": {
			setup: func(s *taxiitest.Server) { s.RelativeRoots = true },
		},
		"valid with upper-case host": {
			url: func(s *taxiitest.Server) string {
				return strings.Replace(s.CollectionURL(collID), "http://", "HTTP://", 1)
			},
		},
		"alias instead of id": {
			url:     func(s *taxiitest.Server) string { return s.CollectionURL(collAlias) },
			want:    ioc.InvalidCollectionURL,
			message: "alias of collection " + collID,
		},
		"unknown id": {
			url:     func(s *taxiitest.Server) string { return s.CollectionURL("0d6a8a0c-0000-4000-8000-000000000000") },
			want:    ioc.InvalidCollectionURL,
			message: "no collection with id",
		},
		"API root not in discovery": {
			url:     func(s *taxiitest.Server) string { return s.URL + "/api2/collections/" + collID + "/" },
			want:    ioc.InvalidURL,
			message: "not listed",
		},
		"no discovery": {
			setup: onPath("/taxii2/", func(w http.ResponseWriter) { http.NotFound(w, nil) }),
			want:  ioc.InvalidURL,
		},
		"discovery is a web page": {
			setup: onPath("/taxii2/", func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, "<html></html>")
			}),
			want: ioc.InvalidURL,
		},
		"discovery is bad JSON": {
			setup: onPath("/taxii2/", func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", MediaType)
				fmt.Fprint(w, `{"api_roots": [`)
			}),
			want: ioc.InvalidURL,
		},
		"API root only speaks 2.0": {
			setup: onPath("/api1/", func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", MediaType)
				fmt.Fprint(w, `{"title": "old", "versions": ["application/vnd.oasis.taxii+json; version=2.0"]}`)
			}),
			want:    ioc.InvalidURL,
			message: "does not support TAXII 2.1",
		},
		"wrong password": {
			password: "wrong",
			want:     ioc.InvalidCredentials,
		},
		"collection not readable": {
			url:     func(s *taxiitest.Server) string { return s.CollectionURL(lockedID) },
			want:    ioc.InvalidCredentials,
			message: "not readable",
		},
		"objects refused despite can_read": {
			setup: onPath("/api1/collections/"+collID+"/objects/", func(w http.ResponseWriter) { w.WriteHeader(http.StatusForbidden) }),
			want:  ioc.InvalidCredentials,
		},
		"server unreachable: no connection made": {
			url:  func(*taxiitest.Server) string { return goneURL + "/api1/collections/" + collID + "/" },
			want: ioc.FailedToConnect,
		},
		"server fault": {
			setup: onPath("/api1/collections/", func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }),
			want:  ioc.FetchingDataError,
		},
		"not a collection URL": {
			url:     func(s *taxiitest.Server) string { return s.URL + "/api1/" },
			want:    ioc.InvalidCollectionURL,
			message: "<api_root>/collections/<collection_id>/",
		},
		"objects URL": {
			url:  func(s *taxiitest.Server) string { return s.CollectionURL(collID) + "objects/" },
			want: ioc.InvalidCollectionURL,
		},
		"query string": {
			url:  func(s *taxiitest.Server) string { return s.CollectionURL(collID) + "?x=1" },
			want: ioc.InvalidCollectionURL,
		},
		"credentials in URL": {
			url: func(s *taxiitest.Server) string {
				return strings.Replace(s.CollectionURL(collID), "http://", "http://a:b@", 1)
			},
			want: ioc.InvalidURL,
		},
		"not a URL": {
			url:  func(*taxiitest.Server) string { return "collections/x/" },
			want: ioc.InvalidURL,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, 1)
			if tc.setup != nil {
				tc.setup(s)
			}
			c := newClient(100, &sleepRecorder{})
			if tc.password != "" {
				c.Password = tc.password
			}
			u := s.CollectionURL(collID)
			if tc.url != nil {
				u = tc.url(s)
			}
			err := c.ValidateCollectionURL(context.Background(), u)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ValidateCollectionURL(%q) = %v, want nil", u, err)
				}
				return
			}
			var fe *ioc.FetchError
			if !errors.As(err, &fe) || fe.Kind != tc.want {
				t.Fatalf("ValidateCollectionURL(%q) = %v, want %s", u, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not say %q", err, tc.message)
			}
		})
	}
}

func TestParseCollectionURL(t *testing.T) {
	tests := map[string]struct {
		in, root, id, canonical string
	}{
		"plain":          {"https://taxii.example.com/api1/collections/abc/", "https://taxii.example.com/api1/", "abc", "https://taxii.example.com/api1/collections/abc/"},
		"no slash":       {"https://taxii.example.com/api1/collections/abc", "https://taxii.example.com/api1/", "abc", "https://taxii.example.com/api1/collections/abc/"},
		"root at host":   {"http://h:8080/collections/abc/", "http://h:8080/", "abc", "http://h:8080/collections/abc/"},
		"nested root":    {"https://H.example/taxii/api/v21/collections/abc/", "https://h.example/taxii/api/v21/", "abc", "https://h.example/taxii/api/v21/collections/abc/"},
		"escaped id":     {"https://h/r/collections/a%20b/", "https://h/r/", "a b", "https://h/r/collections/a%20b/"},
		"IPv6 host":      {"https://[2001:db8::1]:8443/r/collections/c/", "https://[2001:db8::1]:8443/r/", "c", "https://[2001:db8::1]:8443/r/collections/c/"},
		"spaces trimmed": {"  https://h/r/collections/c/ ", "https://h/r/", "c", "https://h/r/collections/c/"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cu, err := ParseCollectionURL(tc.in)
			if err != nil {
				t.Fatalf("ParseCollectionURL(%q): %v", tc.in, err)
			}
			if cu.APIRoot != tc.root || cu.ID != tc.id || cu.String() != tc.canonical {
				t.Errorf("got root %q id %q canonical %q, want %q %q %q", cu.APIRoot, cu.ID, cu.String(), tc.root, tc.id, tc.canonical)
			}
		})
	}
}

func TestSameRoot(t *testing.T) {
	tests := map[string]struct {
		a, b string
		same bool
	}{
		"identical":      {"https://h/api1/", "https://h/api1/", true},
		"trailing slash": {"https://h/api1", "https://h/api1/", true},
		"default port":   {"https://h:443/api1/", "https://H/api1/", true},
		"other port":     {"https://h:8443/api1/", "https://h/api1/", false},
		"other path":     {"https://h/api2/", "https://h/api1/", false},
		"other scheme":   {"http://h/api1/", "https://h/api1/", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := sameRoot(tc.a, tc.b); got != tc.same {
				t.Errorf("sameRoot(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
			}
		})
	}
}
