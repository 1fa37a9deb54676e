package ioc

import (
	"errors"
	"strings"
	"testing"
)

func TestCertSHA1IsItsOwnKind(t *testing.T) {
	v, err := Normalize(CertSHA1, " 8E7E1B0F4C3A2D1E0F9A8B7C6D5E4F3A2B1C0D9E ")
	if err != nil || v != "8e7e1b0f4c3a2d1e0f9a8b7c6d5e4f3a2b1c0d9e" {
		t.Errorf("Normalize(CertSHA1) = %q, %v", v, err)
	}
	if _, err := Normalize(CertSHA1, "abc"); err == nil {
		t.Error("a short fingerprint was accepted")
	}
	if k, err := ParseKind("cert_sha1"); err != nil || k != CertSHA1 {
		t.Errorf("ParseKind(cert_sha1) = %q, %v", k, err)
	}
	if RuleValue(2024897) != "sid:2024897" {
		t.Errorf("RuleValue = %q", RuleValue(2024897))
	}
}

// A failure classified again (a source wrapping what the HTTP classifier
// returned, or its message) says its kind once: the run's detail is shown
// beside the kind already.
func TestFetchErrorSaysItsKindOnce(t *testing.T) {
	inner := Fail(ConnectionError, errors.New("falcon: the connection failed: reset"))
	tests := map[string]struct {
		err  error
		want string
	}{
		"once":                {inner, "Connection Error: falcon: the connection failed: reset"},
		"wrapped again":       {Fail(ConnectionError, inner), "Connection Error: falcon: the connection failed: reset"},
		"its message again":   {Fail(ConnectionError, errors.New(inner.Error())), "Connection Error: falcon: the connection failed: reset"},
		"another kind":        {Fail(FetchingDataError, inner), "Fetching Data Error: Connection Error: falcon: the connection failed: reset"},
		"kind as a word only": {Fail(ConnectionError, errors.New("Connection Errors were many")), "Connection Error: Connection Errors were many"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if got, want := FailureOf(tc.err), FailureKind(strings.SplitN(tc.want, ":", 2)[0]); got != want {
				t.Errorf("FailureOf = %q, want %q", got, want)
			}
		})
	}
}

// TestHashKind: a hash's length names its kind, whatever a feed labels it.
func TestHashKind(t *testing.T) {
	for v, want := range map[string]Kind{
		strings.Repeat("a", 32): MD5, strings.Repeat("b", 40): SHA1, strings.Repeat("c", 64): SHA256,
		strings.Repeat("d", 31): "", strings.Repeat("e", 128): "", "": "",
	} {
		if got, ok := HashKind(v); got != want || ok != (want != "") {
			t.Errorf("HashKind(%d characters) = %q, %v; want %q", len(v), got, ok, want)
		}
	}
}
