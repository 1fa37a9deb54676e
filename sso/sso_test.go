package sso

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/crewjam/saml"

	"github.com/tifeeds/tifeeds/store"
)

func testCert(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "idp"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func ptr[T any](v T) *T { return &v }

func TestIdPFromFields(t *testing.T) {
	der := testCert(t)
	pemText := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	b64 := base64.StdEncoding.EncodeToString(der)
	wrapped := b64[:40] + "\n" + b64[40:]
	for name, cert := range map[string]string{"PEM": pemText, "base64 DER": b64, "base64 DER over lines": wrapped} {
		idp, err := idpOf(&store.SSOConfig{IssuerURL: ptr("https://idp.example/e"), SSOEntryPoint: ptr("https://idp.example/sso"),
			IdpCertificate: ptr(cert)})
		if err != nil || idp.EntityID != "https://idp.example/e" ||
			idp.IDPSSODescriptors[0].KeyDescriptors[0].KeyInfo.X509Data.X509Certificates[0].Data != b64 {
			t.Errorf("%s: %+v %v", name, idp, err)
		}
	}
	for name, c := range map[string]*store.SSOConfig{
		"no certificate": {IssuerURL: ptr("https://idp.example/e"), SSOEntryPoint: ptr("https://idp.example/sso")},
		"no issuer":      {SSOEntryPoint: ptr("https://idp.example/sso"), IdpCertificate: ptr(b64)},
		"bad entry":      {IssuerURL: ptr("e"), SSOEntryPoint: ptr("javascript:alert(1)"), IdpCertificate: ptr(b64)},
		"not a cert":     {IssuerURL: ptr("e"), SSOEntryPoint: ptr("https://idp.example/sso"), IdpCertificate: ptr("bm90IGEgY2VydA==")},
		"not base64":     {IssuerURL: ptr("e"), SSOEntryPoint: ptr("https://idp.example/sso"), IdpCertificate: ptr("%%%")},
		"empty metadata": {SSOConfigMethod: ptr("metadata")},
	} {
		if _, err := idpOf(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestIdPFromMetadata(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(testCert(t))
	entity := func(id string, idp bool) string {
		role := `<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/>`
		if idp {
			role = `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>` + b64 + `</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso"/>
</md:IDPSSODescriptor>`
		}
		return `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="` + id + `">` + role + `</md:EntityDescriptor>`
	}
	one := entity("https://idp.example/e", true)
	wrapped := `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">` + entity("https://sp.example", false) + one + `</md:EntitiesDescriptor>`
	for name, md := range map[string]string{"entity": one, "entities": wrapped} {
		idp, err := idpOf(&store.SSOConfig{SSOConfigMethod: ptr("metadata"), IdpMetadata: ptr(md)})
		if err != nil || idp.EntityID != "https://idp.example/e" {
			t.Errorf("%s: %+v %v", name, idp, err)
		}
	}
	two := `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">` + one + entity("https://idp2.example", true) + `</md:EntitiesDescriptor>`
	noKey := strings.Replace(one, "use=\"signing\"", "use=\"encryption\"", 1)
	for name, md := range map[string]string{"two IdPs": two, "no signing key": noKey, "not XML": "<md:Entity", "SP only": entity("x", false)} {
		if _, err := idpOf(&store.SSOConfig{SSOConfigMethod: ptr("metadata"), IdpMetadata: ptr(md)}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestStrictTimes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	good := func() *saml.Assertion {
		return &saml.Assertion{IssueInstant: now.Add(-time.Second),
			Conditions: &saml.Conditions{NotBefore: now.Add(-time.Second), NotOnOrAfter: now.Add(time.Minute)},
			Subject: &saml.Subject{SubjectConfirmations: []saml.SubjectConfirmation{{Method: "urn:oasis:names:tc:SAML:2.0:cm:bearer",
				SubjectConfirmationData: &saml.SubjectConfirmationData{NotOnOrAfter: now.Add(time.Minute)}}}}}
	}
	if err := strictTimes(good(), now); err != nil {
		t.Fatal(err)
	}
	for name, bend := range map[string]func(a *saml.Assertion){
		"issued a second ahead": func(a *saml.Assertion) { a.IssueInstant = now.Add(time.Second) },
		"not yet valid":         func(a *saml.Assertion) { a.Conditions.NotBefore = now.Add(time.Second) },
		"expired this instant":  func(a *saml.Assertion) { a.Conditions.NotOnOrAfter = now },
		"confirmation expired":  func(a *saml.Assertion) { a.Subject.SubjectConfirmations[0].SubjectConfirmationData.NotOnOrAfter = now },
		"confirmation not bearer": func(a *saml.Assertion) {
			a.Subject.SubjectConfirmations[0].Method = "urn:oasis:names:tc:SAML:2.0:cm:holder-of-key"
		},
		"confirmation not yet due": func(a *saml.Assertion) {
			a.Subject.SubjectConfirmations[0].SubjectConfirmationData.NotBefore = now.Add(time.Second)
		},
	} {
		a := good()
		bend(a)
		var r *Refusal
		if err := strictTimes(a, now); !errors.As(err, &r) || r.Reason != Expired {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSkewIsCrewjams(t *testing.T) {
	if saml.MaxClockSkew != Skew {
		t.Fatalf("crewjam's MaxClockSkew is %s, want %s: a tenant allowing skew would get another", saml.MaxClockSkew, Skew)
	}
}
