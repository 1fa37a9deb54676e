package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/mail"
	"net/smtp"
	"net/url"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// Webhook headers.
const (
	HeaderSignature = "X-Tifeeds-Signature"
	HeaderEvent     = "X-Tifeeds-Event"
	HeaderDelivery  = "X-Tifeeds-Delivery"
)

// Bounds of one webhook request.
const (
	WebhookTimeout = 15 * time.Second
	// maxResponse is how much of a receiver's answer is read (and
	// dropped): enough to reuse the connection, never more.
	maxResponse = 64 << 10
	// maxErrorLen bounds the error the delivery log keeps.
	maxErrorLen = 300
)

// Sign returns the X-Tifeeds-Signature value of body under secret:
// "sha256=" and the hex HMAC-SHA256.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Webhooks posts notifications through the egress policy feeds use.
type Webhooks struct {
	client *http.Client
}

// NewWebhooks returns a sender whose client follows o (the feeds' egress
// options: private destinations refused unless allowed). Redirects are not
// followed: a receiver answers where it was registered.
func NewWebhooks(o egress.Options) *Webhooks {
	if o.Timeout <= 0 || o.Timeout > WebhookTimeout {
		o.Timeout = WebhookTimeout
	}
	if o.ConnectTimeout <= 0 || o.ConnectTimeout > WebhookTimeout {
		o.ConnectTimeout = WebhookTimeout
	}
	c := egress.NewClient(o)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Webhooks{client: c}
}

// CheckWebhookURL refuses what no webhook URL may be (like a feed's URL:
// http or https, a host, no user information).
func CheckWebhookURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	if err := egress.CheckURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// Send posts item's body to the webhook url, signed with secret, and
// returns the HTTP status (0 when there was no answer).
func (w *Webhooks) Send(ctx context.Context, url, secret string, item *store.OutboxItem) (int, error) {
	if _, err := CheckWebhookURL(url); err != nil {
		return 0, err
	}
	body := []byte(item.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tifeeds-webhook")
	req.Header.Set(HeaderEvent, item.Event)
	req.Header.Set(HeaderDelivery, item.DeliveryID)
	req.Header.Set(HeaderSignature, Sign(secret, body))
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// SMTP sends notifications by email through one server.
type SMTP struct {
	host     string // host:port
	implicit bool   // smtps://: TLS from the start
	user     string
	password string
	from     string
	// TLS is the TLS configuration (tests trust their server with it);
	// nil: the system's roots and the server's name.
	TLS *tls.Config
	// Timeout bounds one message's exchange.
	Timeout time.Duration
}

// ParseSMTP reads --smtp-url: smtp://[user:pass@]host[:587] (STARTTLS,
// required when credentials are given) or smtps://[user:pass@]host[:465];
// user and password, when not empty, replace those of the URL. from is the
// sender address. Errors never quote the password.
func ParseSMTP(raw, user, password, from string) (*SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("notify: --smtp-url is not a URL")
	}
	s := &SMTP{Timeout: 30 * time.Second}
	port := ""
	switch u.Scheme {
	case "smtp":
		port = "587"
	case "smtps":
		port, s.implicit = "465", true
	default:
		return nil, errors.New("notify: --smtp-url must start with smtp:// (STARTTLS) or smtps:// (TLS)")
	}
	if u.Hostname() == "" {
		return nil, errors.New("notify: --smtp-url has no host")
	}
	if u.Port() != "" {
		port = u.Port()
	}
	s.host = net.JoinHostPort(u.Hostname(), port)
	if u.User != nil {
		s.user = u.User.Username()
		s.password, _ = u.User.Password()
	}
	if user != "" {
		s.user = user
	}
	if password != "" {
		s.password = password
	}
	if from == "" {
		from = "tifeeds@" + u.Hostname()
	}
	a, err := mail.ParseAddress(from)
	if err != nil {
		return nil, errors.New("notify: the sender address (--smtp-from) is not an email address")
	}
	s.from = a.Address
	return s, nil
}

// Send mails item to the addresses to.
func (s *SMTP) Send(ctx context.Context, to []string, item *store.OutboxItem) error {
	deadline := time.Now().Add(s.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	host, _, _ := net.SplitHostPort(s.host)
	cfg := s.TLS
	if cfg == nil {
		cfg = &tls.Config{ServerName: host}
	}
	dialer := &net.Dialer{Deadline: deadline}
	var conn net.Conn
	var err error
	if s.implicit {
		conn, err = (&tls.Dialer{NetDialer: dialer, Config: cfg}).DialContext(ctx, "tcp", s.host)
	} else {
		conn, err = dialer.DialContext(ctx, "tcp", s.host)
	}
	if err != nil {
		return fmt.Errorf("unable to reach the SMTP server: %w", err)
	}
	_ = conn.SetDeadline(deadline)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("the SMTP server: %w", err)
	}
	defer c.Close()
	if !s.implicit {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(cfg); err != nil {
				return fmt.Errorf("STARTTLS: %w", err)
			}
		}
	}
	if s.user != "" {
		// PlainAuth refuses to send the password without TLS (but to
		// localhost).
		if err := c.Auth(smtp.PlainAuth("", s.user, s.password, host)); err != nil {
			return fmt.Errorf("SMTP authentication: %w", err)
		}
	}
	if err := c.Mail(s.from); err != nil {
		return fmt.Errorf("SMTP MAIL: %w", err)
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt); err != nil {
			return fmt.Errorf("SMTP RCPT %s: %w", rcpt, err)
		}
	}
	wc, err := c.Data()
	if err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	if _, err := wc.Write(s.message(to, item)); err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	if err := wc.Close(); err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	return c.Quit()
}

func (s *SMTP) message(to []string, item *store.OutboxItem) []byte {
	var b strings.Builder
	subject := "tifeeds: " + item.Event
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s@tifeeds>\r\n",
		s.from, strings.Join(to, ", "), subject, time.Now().UTC().Format(time.RFC1123Z), item.DeliveryID)
	fmt.Fprintf(&b, "%s: %s\r\n%s: %s\r\nMIME-Version: 1.0\r\nContent-Type: application/json; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n",
		HeaderEvent, item.Event, HeaderDelivery, item.DeliveryID)
	// Base64 in lines of 76: SMTP bounds lines, and a JSON body is one.
	enc := base64.StdEncoding.EncodeToString([]byte(item.Body))
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n")
	return []byte(b.String())
}

// trimError keeps the delivery log's error short.
func trimError(err error) string {
	if err == nil {
		return ""
	}
	msg := ioc.MaskURLs(err.Error())
	if len(msg) > maxErrorLen {
		msg = msg[:maxErrorLen] + "…"
	}
	return msg
}
