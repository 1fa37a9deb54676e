package ioc

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

// HTTPStatusFailure maps an HTTP answer that is not a success to the kind
// the feed's status shows: 401 and 403 Invalid Credentials, 404 and 410
// Invalid URL, 429 Surpassed Query Limit, the rest Fetching Data Error. It
// returns nil for a 2xx answer. who prefixes the message ("tsv", ...). The
// start of the body is drained so that the connection can be reused.
func HTTPStatusFailure(who string, resp *http.Response) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	err := fmt.Errorf("%s: the server answered %s", who, resp.Status)
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

// HTTPRequestFailure classifies the error of a request that got no answer:
// an unresolvable host, a refused connection or an untrusted certificate is
// a Connection Error, anything else a Fetching Data Error.
func HTTPRequestFailure(who string, err error) error {
	var (
		dnsErr  *net.DNSError
		opErr   *net.OpError
		certErr *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &dnsErr):
		return Fail(ConnectionError, fmt.Errorf("%s: host %s not found: %w", who, dnsErr.Name, err))
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return Fail(ConnectionError, fmt.Errorf("%s: unable to connect: %w", who, err))
	case errors.As(err, &certErr):
		return Fail(ConnectionError, fmt.Errorf("%s: TLS certificate not trusted: %w", who, err))
	}
	return Fail(FetchingDataError, fmt.Errorf("%s: request failed: %w", who, err))
}
