package ioc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode"
)

// HTTPStatusFailure maps an HTTP answer that is not a success to the kind
// the feed's status shows: 401 and 403 Invalid Credentials, 404 and 410
// Invalid URL, 429 Surpassed Query Limit, the rest Fetching Data Error. It
// returns nil for a 2xx answer. who prefixes the message ("tsv", ...). The
// message quotes the status line only, never the body: the answer may be
// a page the user has no business reading. The start of the body is
// drained so that the connection can be reused.
func HTTPStatusFailure(who string, resp *http.Response) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	err := fmt.Errorf("%s: the server answered %s", who, StatusLine(resp))
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return Fail(InvalidCredentials, err)
	case http.StatusNotFound, http.StatusGone:
		return Fail(InvalidURL, err)
	case http.StatusTooManyRequests:
		return Fail(SurpassedQueryLimit, err)
	}
	return Fail(FetchingDataError, err)
}

// StatusLine is resp's status as an error detail may quote it: the code and
// at most 64 printable characters of the reason phrase the server chose.
func StatusLine(resp *http.Response) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, resp.Status)
	if s == "" {
		s = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	const most = 3 + 1 + 64
	if r := []rune(s); len(r) > most {
		s = string(r[:most]) + "…"
	}
	return s
}

// The markers ingest/egress sets on its errors; matched by method so that
// ioc does not depend on the client.
type (
	egressRefusal    interface{ EgressRefused() bool }
	notConnected     interface{ NotConnected() bool }
	tooManyRedirects interface{ TooManyRedirects() bool }
)

// HTTPRequestFailure classifies the error of a request that got no answer,
// or of reading an answer's body:
//   - a destination the egress policy refuses, or a URL it refuses (user
//     information, another scheme), is Invalid URL;
//   - no connection made (unresolvable host, refused, unreachable, not
//     made in time) is Failed to connect to feed source;
//   - a connection made that then failed (TLS handshake, untrusted
//     certificate, reset, cut mid-body, no answer in time) is Connection
//     Error;
//   - too many redirects is Fetching Data Error.
//
// URLs the error quotes are masked (MaskURL). The caller checks its own
// context first: a cancelled run is not a failure of the source.
func HTTPRequestFailure(who string, err error) error {
	err = maskErr(err)
	var (
		refusal egressRefusal
		none    notConnected
		dnsErr  *net.DNSError
		opErr   *net.OpError
		certErr *tls.CertificateVerificationError
		netErr  net.Error
		loop    tooManyRedirects
	)
	switch {
	case errors.As(err, &refusal) && refusal.EgressRefused():
		return Fail(InvalidURL, fmt.Errorf("%s: destination refused: %w", who, err))
	case errors.As(err, &dnsErr):
		return Fail(FailedToConnect, fmt.Errorf("%s: host %s not found: %w", who, dnsErr.Name, err))
	case errors.As(err, &none) && none.NotConnected(),
		errors.As(err, &opErr) && opErr.Op == "dial":
		if errors.As(err, &netErr) && netErr.Timeout() {
			return Fail(FailedToConnect, fmt.Errorf("%s: no connection within the time allowed: %w", who, err))
		}
		return Fail(FailedToConnect, fmt.Errorf("%s: unable to connect: %w", who, err))
	case errors.As(err, &certErr):
		return Fail(ConnectionError, fmt.Errorf("%s: TLS certificate not trusted: %w", who, err))
	case errors.As(err, &loop) && loop.TooManyRedirects():
		return Fail(FetchingDataError, fmt.Errorf("%s: %w", who, err))
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return Fail(ConnectionError, fmt.Errorf("%s: the server stalled: %w", who, err))
	}
	return Fail(ConnectionError, fmt.Errorf("%s: the connection failed: %w", who, err))
}

// maskErr masks the URL a *url.Error in err's chain quotes.
func maskErr(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	masked := MaskURL(ue.URL)
	if masked == ue.URL {
		return err
	}
	return &maskedError{msg: strings.ReplaceAll(err.Error(), ue.URL, masked), err: err}
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// MaskURL returns raw with what may be a secret masked: the value of every
// query parameter (?key=***) and the user information. Feed URLs are shown
// through it in run errors, status details and logs. A string that does
// not parse as a URL is returned with everything after '?' masked.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexByte(raw, '?'); i >= 0 {
			return raw[:i+1] + "***"
		}
		return raw
	}
	changed, user := false, u.User != nil
	if user {
		u.User = nil
		changed = true
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			name, _, _ := strings.Cut(p, "=")
			parts[i] = name + "=***"
		}
		u.RawQuery = strings.Join(parts, "&")
		changed = true
	}
	if !changed {
		return raw
	}
	s := u.String()
	if user {
		if i := strings.Index(s, "//"); i >= 0 {
			s = s[:i+2] + "***@" + s[i+2:]
		}
	}
	return s
}

var urlInText = regexp.MustCompile(`(?i)\bhttps?://[^\s"'<>` + "`" + `]+`)

// MaskURLs masks (MaskURL) every http or https URL in text: run error
// details and log lines pass through it, whatever error they quote.
func MaskURLs(text string) string {
	return urlInText.ReplaceAllStringFunc(text, func(u string) string {
		// A quoted URL may end with punctuation of the sentence.
		trail := ""
		for len(u) > 0 && strings.ContainsRune(".,;:)", rune(u[len(u)-1])) {
			trail = u[len(u)-1:] + trail
			u = u[:len(u)-1]
		}
		return MaskURL(u) + trail
	})
}
