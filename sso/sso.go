// Package sso is tifeeds' SAML 2.0 service provider: one per tenant whose
// authentication_method is sso_saml, found by cust_id. It issues the SP
// metadata and the AuthnRequests (HTTP-Redirect binding), and checks the
// responses the IdP posts to the assertion consumer service (HTTP-POST
// binding). XML signatures and response parsing are github.com/crewjam/saml's;
// this package decides what the tenant's configuration means and checks what
// crewjam leaves to its caller (the clock skew per tenant, the requests
// issued and the assertions used, shared by every instance through the
// store, the NameID's form). The HTTP handlers are the server's.
package sso

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/beevik/etree"
	"github.com/crewjam/saml"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/tifeeds/tifeeds/store"
)

// Skew is the clock difference between the IdP and this service tolerated
// for a tenant whose allow_clock_skew is true; for the others, none is.
const Skew = 3 * time.Minute

// RequestTTL is how long a sign-in started here may take at the IdP.
const RequestTTL = 10 * time.Minute

// MaxResponseBytes bounds a SAMLResponse as posted (base64): real ones are a
// few KiB.
const MaxResponseBytes = 256 << 10

func init() {
	// crewjam's tolerance is process-global; it is the most any tenant is
	// allowed, and Check takes it back for the tenants that allow none.
	saml.MaxClockSkew = Skew
}

// Store is what the service provider asks of the store.
type Store interface {
	Tenant(ctx context.Context, id string) (*store.Tenant, error)
	SaveSAMLRequest(ctx context.Context, tenantID, id string, expires time.Time) error
	TakeSAMLRequest(ctx context.Context, tenantID, id string) error
	UseSAMLAssertion(ctx context.Context, tenantID, assertionID string, expires time.Time) error
	SSOUser(ctx context.Context, tenantID, username string) (*store.User, bool, error)
}

// Reason says why a sign-in was refused, in words a person can act on.
type Reason string

// Reasons of refusal.
const (
	NotConfigured Reason = "not_configured"  // the tenant is not set up for SSO (or the server lacks --public-url)
	Malformed     Reason = "malformed"       // not a SAML response we can read
	BadSignature  Reason = "bad_signature"   // unsigned, or not signed by the tenant's IdP
	NotForUs      Reason = "not_for_service" // issuer, audience, destination or recipient is not ours
	Expired       Reason = "expired"         // outside its validity (or not yet valid)
	Replayed      Reason = "replayed"        // the assertion or the request's answer was used already
	Unsolicited   Reason = "unsolicited"     // no sign-in of ours to answer, and the tenant allows none
	Failed        Reason = "idp_failed"      // the IdP answered that the sign-in failed
	NameTaken     Reason = "name_taken"      // the NameID is a root user's or another tenant's
	BadName       Reason = "bad_name"        // the NameID cannot be a username
	UserDisabled  Reason = "user_disabled"
	Busy          Reason = "busy"
)

// Refusal is a refused sign-in: the reason, and for the log a detail that
// never holds the assertion.
type Refusal struct {
	Reason Reason
	Detail string
	// Name is the NameID of a verified assertion refused for its user.
	Name string
}

func (r *Refusal) Error() string { return "sso: " + string(r.Reason) + ": " + r.Detail }

func refuse(reason Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Service is the service provider of every tenant.
type Service struct {
	db   Store
	base string // the public URL, without a final slash; "" disables SSO
	// Now, when set, is the time every check uses (tests); nil is the
	// real clock.
	Now func() time.Time
}

// New returns the service provider; publicURL is where browsers reach the
// server (--public-url): the SP's URLs are made from it, so without it no
// tenant can use SSO.
func New(db Store, publicURL string) *Service {
	return &Service{db: db, base: strings.TrimRight(publicURL, "/")}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// URLs are one tenant's SP addresses; the metadata URL is its entity ID.
type URLs struct {
	EntityID, Login, ACS string
}

// URLsOf returns the SP URLs of a tenant.
func (s *Service) URLsOf(custID string) URLs {
	root := s.base + "/saml/" + url.PathEscape(custID)
	return URLs{EntityID: root + "/metadata", Login: root + "/login", ACS: root + "/acs"}
}

// tenantSP is a tenant's service provider, as its configuration makes it.
type tenantSP struct {
	tenant    *store.Tenant
	sp        *saml.ServiceProvider
	skew      bool
	solicited bool // only responses to requests we issued
}

// provider builds the tenant's service provider, or refuses NotConfigured.
func (s *Service) provider(ctx context.Context, custID string) (*tenantSP, error) {
	if s.base == "" {
		return nil, refuse(NotConfigured, "the server has no --public-url")
	}
	t, err := s.db.Tenant(ctx, custID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuse(NotConfigured, "no such tenant")
	}
	if err != nil {
		return nil, err
	}
	if t.AuthenticationMethod != store.AuthSSOSAML {
		return nil, refuse(NotConfigured, "the tenant's authentication_method is %q", t.AuthenticationMethod)
	}
	if t.SSOConfig == nil {
		return nil, refuse(NotConfigured, "the tenant has no sso_config")
	}
	c := t.SSOConfig
	idp, err := idpOf(c)
	if err != nil {
		return nil, refuse(NotConfigured, "%v", err)
	}
	u := s.URLsOf(t.ID)
	entity, _ := url.Parse(u.EntityID)
	acs, _ := url.Parse(u.ACS)
	out := &tenantSP{tenant: t, skew: deref(c.AllowClockSkew),
		solicited: deref(c.IdpCallbackType) != store.IdPCallbackIdPInitiated}
	out.sp = &saml.ServiceProvider{
		EntityID:                         u.EntityID,
		MetadataURL:                      *entity,
		AcsURL:                           *acs,
		IDPMetadata:                      idp,
		AuthnNameIDFormat:                saml.UnspecifiedNameIDFormat,
		AllowIDPInitiated:                !out.solicited,
		AssertionConsumerServiceBindings: []string{saml.HTTPPostBinding},
		RejectUnknownConditions:          true,
		RejectSHA1Signatures:             true,
	}
	if s.Now != nil {
		out.sp.Clock = dsig.NewFakeClockAt(s.Now())
	}
	return out, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// idpOf reads the IdP a tenant's sso_config describes: from idp_metadata
// when sso_config_method is "metadata", else from issuer_url,
// sso_entry_point and idp_certificate. It has an entity ID, an
// HTTP-Redirect SSO location and at least one signing certificate.
func idpOf(c *store.SSOConfig) (*saml.EntityDescriptor, error) {
	var idp *saml.EntityDescriptor
	if deref(c.SSOConfigMethod) == store.SSOConfigMetadata {
		var err error
		if idp, err = parseMetadata([]byte(deref(c.IdpMetadata))); err != nil {
			return nil, err
		}
	} else {
		issuer, entry := strings.TrimSpace(deref(c.IssuerURL)), strings.TrimSpace(deref(c.SSOEntryPoint))
		if issuer == "" || entry == "" || strings.TrimSpace(deref(c.IdpCertificate)) == "" {
			return nil, errors.New("sso_config lacks issuer_url, sso_entry_point or idp_certificate")
		}
		certs, err := parseCertificates(deref(c.IdpCertificate))
		if err != nil {
			return nil, err
		}
		d := saml.IDPSSODescriptor{SingleSignOnServices: []saml.Endpoint{{Binding: saml.HTTPRedirectBinding, Location: entry}}}
		for _, der := range certs {
			d.KeyDescriptors = append(d.KeyDescriptors, saml.KeyDescriptor{Use: "signing", KeyInfo: saml.KeyInfo{
				X509Data: saml.X509Data{X509Certificates: []saml.X509Certificate{{Data: base64.StdEncoding.EncodeToString(der)}}}}})
		}
		idp = &saml.EntityDescriptor{EntityID: issuer, IDPSSODescriptors: []saml.IDPSSODescriptor{d}}
	}
	if idp.EntityID == "" {
		return nil, errors.New("the IdP has no entity ID")
	}
	location := ""
	signing := 0
	for _, d := range idp.IDPSSODescriptors {
		for _, e := range d.SingleSignOnServices {
			if e.Binding == saml.HTTPRedirectBinding && location == "" {
				location = e.Location
			}
		}
		for _, k := range d.KeyDescriptors {
			if k.Use == "" || k.Use == "signing" {
				signing += len(k.KeyInfo.X509Data.X509Certificates)
			}
		}
	}
	if u, err := url.Parse(location); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("the IdP has no HTTP-Redirect SingleSignOnService URL")
	}
	if signing == 0 {
		return nil, errors.New("the IdP has no signing certificate")
	}
	return idp, nil
}

// parseCertificates reads idp_certificate: PEM (one or more CERTIFICATE
// blocks), or the base64 of one DER certificate.
func parseCertificates(text string) ([][]byte, error) {
	text = strings.TrimSpace(text)
	var ders [][]byte
	if strings.Contains(text, "-----BEGIN") {
		rest := []byte(text)
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			if b.Type == "CERTIFICATE" {
				ders = append(ders, b.Bytes)
			}
		}
	} else {
		der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(text), ""))
		if err != nil {
			return nil, errors.New("idp_certificate is neither PEM nor base64 DER")
		}
		ders = append(ders, der)
	}
	if len(ders) == 0 {
		return nil, errors.New("idp_certificate holds no certificate")
	}
	for _, der := range ders {
		if _, err := x509.ParseCertificate(der); err != nil {
			return nil, fmt.Errorf("idp_certificate: %w", err)
		}
	}
	return ders, nil
}

// parseMetadata reads IdP metadata: an EntityDescriptor, or an
// EntitiesDescriptor holding exactly one IdP.
func parseMetadata(data []byte) (*saml.EntityDescriptor, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("sso_config_method is metadata but idp_metadata is empty")
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(data); err != nil || doc.Root() == nil {
		return nil, errors.New("idp_metadata is not XML")
	}
	var found []*saml.EntityDescriptor
	var walk func(el *etree.Element) error
	walk = func(el *etree.Element) error {
		switch el.Tag {
		case "EntityDescriptor":
			d := etree.NewDocument()
			d.SetRoot(el.Copy())
			b, err := d.WriteToBytes()
			if err != nil {
				return err
			}
			e := new(saml.EntityDescriptor)
			if err := xml.Unmarshal(b, e); err != nil {
				return fmt.Errorf("idp_metadata: %w", err)
			}
			if len(e.IDPSSODescriptors) > 0 {
				found = append(found, e)
			}
		case "EntitiesDescriptor":
			for _, c := range el.ChildElements() {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(doc.Root()); err != nil {
		return nil, err
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("idp_metadata must describe exactly one IdP, not %d", len(found))
	}
	return found[0], nil
}

// Metadata returns the tenant's SP metadata (XML).
func (s *Service) Metadata(ctx context.Context, custID string) ([]byte, error) {
	t, err := s.provider(ctx, custID)
	if err != nil {
		return nil, err
	}
	b, err := xml.MarshalIndent(t.sp.Metadata(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sso: unable to write SP metadata: %w", err)
	}
	return append([]byte(xml.Header), b...), nil
}

// LoginURL starts a sign-in: it keeps the id of a new AuthnRequest (any
// instance may receive its answer) and returns the IdP URL to send the
// browser to (HTTP-Redirect binding).
func (s *Service) LoginURL(ctx context.Context, custID string) (string, error) {
	t, err := s.provider(ctx, custID)
	if err != nil {
		return "", err
	}
	req, err := t.sp.MakeAuthenticationRequest(t.sp.GetSSOBindingLocation(saml.HTTPRedirectBinding),
		saml.HTTPRedirectBinding, saml.HTTPPostBinding)
	if err != nil {
		return "", fmt.Errorf("sso: unable to make an AuthnRequest: %w", err)
	}
	if err := s.db.SaveSAMLRequest(ctx, t.tenant.ID, req.ID, s.now().Add(RequestTTL)); err != nil {
		if errors.Is(err, store.ErrSAMLBusy) {
			return "", refuse(Busy, "%v", err)
		}
		return "", err
	}
	u, err := req.Redirect("", t.sp)
	if err != nil {
		return "", fmt.Errorf("sso: unable to encode an AuthnRequest: %w", err)
	}
	return u.String(), nil
}

// SignIn is an accepted assertion's outcome.
type SignIn struct {
	User    *store.User
	Tenant  *store.Tenant
	Created bool // the user was created just in time
}

// Consume checks a SAMLResponse posted to the tenant's ACS and returns the
// user it signs in, or a *Refusal (other errors: the store failed).
func (s *Service) Consume(ctx context.Context, custID, samlResponse string) (*SignIn, error) {
	t, err := s.provider(ctx, custID)
	if err != nil {
		return nil, err
	}
	if len(samlResponse) > MaxResponseBytes {
		return nil, refuse(Malformed, "SAMLResponse of %d bytes", len(samlResponse))
	}
	raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(samlResponse), ""))
	if err != nil || len(raw) == 0 {
		return nil, refuse(Malformed, "SAMLResponse is not base64")
	}
	// Comments cannot be signed (exclusive canonicalisation drops them),
	// so one inside a NameID changes the name a parser reads without
	// breaking the signature. No IdP sends any: refuse them all.
	if bytes.Contains(raw, []byte("<!--")) {
		return nil, refuse(Malformed, "the response holds an XML comment")
	}
	inResponseTo, err := responseInResponseTo(raw)
	if err != nil {
		return nil, refuse(Malformed, "%v", err)
	}
	// crewjam checks that the signed response and assertion answer this
	// request; whether it is one of ours, pending, for this tenant, is
	// asked once they are found genuine (TakeSAMLRequest below), so that a
	// forged answer is refused for what it is.
	var requests []string
	if inResponseTo != "" {
		requests = []string{inResponseTo}
	} else if t.solicited {
		return nil, refuse(Unsolicited, "a response without InResponseTo, and idp_callback_type is not idp_initiated")
	}
	var storeErr error
	sp := *t.sp
	sp.ReplayCache = replayCache(func(id string, until time.Time) error {
		err := s.db.UseSAMLAssertion(ctx, t.tenant.ID, id, until)
		if err != nil && !errors.Is(err, store.ErrSAMLReplayed) {
			storeErr = err
		}
		return err
	})
	a, err := sp.ParseXMLResponse(raw, requests, sp.AcsURL)
	if storeErr != nil {
		return nil, storeErr
	}
	if err != nil {
		return nil, classify(err)
	}
	if !t.skew {
		if err := strictTimes(a, s.now()); err != nil {
			return nil, err
		}
	}
	if inResponseTo != "" {
		if err := s.db.TakeSAMLRequest(ctx, t.tenant.ID, inResponseTo); errors.Is(err, store.ErrSAMLReplayed) {
			return nil, refuse(Replayed, "InResponseTo names no pending sign-in of this tenant (unknown, expired or answered)")
		} else if err != nil {
			return nil, err
		}
	}
	if a.Subject == nil || a.Subject.NameID == nil {
		return nil, refuse(BadName, "the assertion has no NameID")
	}
	name := a.Subject.NameID.Value
	u, created, err := s.db.SSOUser(ctx, t.tenant.ID, name)
	var invalid *store.ValidationError
	var ref *Refusal
	switch {
	case errors.Is(err, store.ErrSSONameTaken):
		ref = refuse(NameTaken, "NameID %q is held by a root user or another tenant's user", quote(name))
	case errors.Is(err, store.ErrSSOUserDisabled):
		ref = refuse(UserDisabled, "user %q is disabled", quote(name))
	case errors.As(err, &invalid):
		ref = refuse(BadName, "NameID %q cannot be a username: %s", quote(name), invalid.Message)
	case err != nil:
		return nil, err
	}
	if ref != nil {
		ref.Name = quote(name)
		return nil, ref
	}
	return &SignIn{User: u, Tenant: t.tenant, Created: created}, nil
}

// quote cuts a name for a log line.
func quote(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

type replayCache func(id string, until time.Time) error

func (f replayCache) Consume(id string, until time.Time) error {
	if err := f(id, until); err != nil {
		if errors.Is(err, store.ErrSAMLReplayed) {
			return saml.ErrAssertionReplayed
		}
		return err
	}
	return nil
}

// responseInResponseTo reads the Response's InResponseTo attribute, to tell
// crewjam which request it may answer; crewjam checks it is the one the
// signed response and assertion name.
func responseInResponseTo(raw []byte) (string, error) {
	doc := etree.NewDocument()
	doc.ReadSettings.Permissive = false
	if err := doc.ReadFromBytes(raw); err != nil || doc.Root() == nil {
		return "", errors.New("the response is not XML")
	}
	root := doc.Root()
	if root.Tag != "Response" {
		return "", fmt.Errorf("the message is a %s, not a Response", root.Tag)
	}
	return root.SelectAttrValue("InResponseTo", ""), nil
}

// strictTimes holds an assertion to its times with no tolerance, for a
// tenant that allows no clock skew (crewjam allows Skew to every tenant).
func strictTimes(a *saml.Assertion, now time.Time) error {
	if a.IssueInstant.After(now) {
		return refuse(Expired, "the assertion is issued in the future (%s)", a.IssueInstant.UTC().Format(time.RFC3339))
	}
	if c := a.Conditions; c != nil {
		if c.NotBefore.After(now) {
			return refuse(Expired, "the assertion is not valid before %s", c.NotBefore.UTC().Format(time.RFC3339))
		}
		if !c.NotOnOrAfter.IsZero() && !now.Before(c.NotOnOrAfter) {
			return refuse(Expired, "the assertion expired at %s", c.NotOnOrAfter.UTC().Format(time.RFC3339))
		}
	}
	if a.Subject != nil {
		ok := false
		for _, sc := range a.Subject.SubjectConfirmations {
			d := sc.SubjectConfirmationData
			if sc.Method == "urn:oasis:names:tc:SAML:2.0:cm:bearer" && d != nil && !d.NotBefore.After(now) && now.Before(d.NotOnOrAfter) {
				ok = true
			}
		}
		if !ok {
			return refuse(Expired, "no bearer SubjectConfirmation is valid now")
		}
	}
	return nil
}

// classify turns crewjam's error into a reason; the detail is crewjam's
// private error, which names fields and values but not the assertion.
func classify(err error) error {
	detail := err.Error()
	var ire *saml.InvalidResponseError
	if errors.As(err, &ire) && ire.PrivateErr != nil {
		err = ire.PrivateErr
		detail = err.Error()
	}
	var status saml.ErrBadStatus
	reason := Malformed
	switch {
	case errors.As(err, &status):
		reason = Failed
	case errors.Is(err, saml.ErrAssertionReplayed):
		reason = Replayed
	case errors.Is(err, saml.ErrRequestIDMismatch):
		reason = Unsolicited
	case errors.Is(err, saml.ErrInvalidSignature), errors.Is(err, saml.ErrUntrustedCertificate),
		errors.Is(err, saml.ErrCertificateNotValidNow),
		// crewjam's error for an unsigned response and assertion is
		// unexported.
		strings.Contains(detail, "signature element not present"):
		reason = BadSignature
	case errors.Is(err, saml.ErrIssuerMismatch), errors.Is(err, saml.ErrDestinationMismatch),
		errors.Is(err, saml.ErrAudienceMismatch):
		reason = NotForUs
	case errors.Is(err, saml.ErrExpired), errors.Is(err, saml.ErrNotYetValid):
		reason = Expired
	}
	if len(detail) > 300 {
		detail = detail[:300] + "…"
	}
	return &Refusal{Reason: reason, Detail: detail}
}
