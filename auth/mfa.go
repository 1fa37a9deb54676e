package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"

	"github.com/tifeeds/tifeeds/store"
)

// MFA with TOTP (RFC 6238) for password sign-in: the codes are made and
// checked by github.com/pquerna/otp, the secrets sealed at rest with
// store.Secrets. A code is good for the current 30-second step and one on
// either side, and once only per user: the store takes its step as used in
// one conditional update, whichever instance sees it.
type MFA struct {
	Store   MFAStore
	Secrets *store.Secrets
	// Now is the clock codes are checked against; nil is time.Now.
	Now func() time.Time
	// Issuer names the service in authenticator apps; empty is "tifeeds".
	Issuer string
}

// MFAStore is what MFA asks of the store.
type MFAStore interface {
	MFAState(ctx context.Context, userID int64) (*store.MFAState, error)
	SetMFAPending(ctx context.Context, userID int64, sealed []byte) error
	EnableMFA(ctx context.Context, userID int64, pending []byte, step int64, recoveryCodes []string) (bool, error)
	ReplaceRecoveryCodes(ctx context.Context, userID int64, codes []string) error
	UseMFAStep(ctx context.Context, userID, step int64) (bool, error)
	UseRecoveryCode(ctx context.Context, userID int64, code string) (bool, error)
	DisableMFA(ctx context.Context, userID int64) (*store.User, error)
}

// The TOTP parameters every authenticator app supports.
const (
	totpPeriod = 30
	totpDigits = otp.DigitsSix
	totpAlg    = otp.AlgorithmSHA1
	// MaxCodeLength bounds a code or recovery code read from a request.
	MaxCodeLength = 64
)

// ErrWrongCode refuses a code that is wrong, outside the current step ± 1,
// or already used, and a recovery code that is not the user's or spent:
// callers do not tell these apart.
var ErrWrongCode = errors.New("wrong or already used code")

// Enrolment is a new secret, shown to the person enrolling and to nobody
// after: the otpauth:// URL, the secret as text, and the URL as a QR code
// (a PNG data URL).
type Enrolment struct {
	Secret string
	URL    string
	QRCode string
}

func (m *MFA) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Begin makes a new secret for the user, kept sealed and pending until
// Confirm sees a code of it.
func (m *MFA) Begin(ctx context.Context, u *store.User) (*Enrolment, error) {
	issuer := m.Issuer
	if issuer == "" {
		issuer = "tifeeds"
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: issuer, AccountName: u.Username,
		Period: totpPeriod, Digits: totpDigits, Algorithm: totpAlg})
	if err != nil {
		return nil, fmt.Errorf("auth: unable to make a TOTP secret: %w", err)
	}
	sealed, err := m.Secrets.Seal(key.Secret())
	if err != nil {
		return nil, err
	}
	if err := m.Store.SetMFAPending(ctx, u.ID, sealed); err != nil {
		return nil, err
	}
	img, err := key.Image(240, 240)
	if err != nil {
		return nil, fmt.Errorf("auth: unable to draw the QR code: %w", err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("auth: unable to encode the QR code: %w", err)
	}
	return &Enrolment{Secret: key.Secret(), URL: key.URL(),
		QRCode: "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())}, nil
}

// Confirm checks code against the pending secret; when it matches, MFA is
// on and the user's ten new recovery codes are returned, in clear this
// once.
func (m *MFA) Confirm(ctx context.Context, userID int64, code string) ([]string, error) {
	st, err := m.Store.MFAState(ctx, userID)
	if err != nil {
		return nil, err
	}
	if st.Enabled {
		return nil, store.Invalid("mfa", "MFA is already on")
	}
	if len(st.Pending) == 0 {
		return nil, store.Invalid("mfa", "no enrolment in progress; begin one first")
	}
	step, ok, err := m.match(st.Pending, code)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrWrongCode
	}
	codes := newRecoveryCodes()
	ok, err = m.Store.EnableMFA(ctx, userID, st.Pending, step, codes)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrWrongCode
	}
	return codes, nil
}

// Verify checks a code of the user's secret in force and spends its step.
func (m *MFA) Verify(ctx context.Context, userID int64, code string) error {
	st, err := m.Store.MFAState(ctx, userID)
	if err != nil {
		return err
	}
	if !st.Enabled {
		return ErrWrongCode
	}
	step, ok, err := m.match(st.Secret, code)
	if err != nil {
		return err
	}
	if !ok {
		return ErrWrongCode
	}
	used, err := m.Store.UseMFAStep(ctx, userID, step)
	if err != nil {
		return err
	}
	if !used {
		return ErrWrongCode
	}
	return nil
}

// Recover spends one of the user's recovery codes.
func (m *MFA) Recover(ctx context.Context, userID int64, code string) error {
	code = normaliseRecoveryCode(code)
	if code == "" || len(code) > MaxCodeLength {
		return ErrWrongCode
	}
	ok, err := m.Store.UseRecoveryCode(ctx, userID, code)
	if err != nil {
		return err
	}
	if !ok {
		return ErrWrongCode
	}
	return nil
}

// NewRecoveryCodes replaces the user's recovery codes and returns the new
// ones, in clear this once.
func (m *MFA) NewRecoveryCodes(ctx context.Context, userID int64) ([]string, error) {
	codes := newRecoveryCodes()
	if err := m.Store.ReplaceRecoveryCodes(ctx, userID, codes); err != nil {
		return nil, err
	}
	return codes, nil
}

// match finds the step, among the current one and one on either side, whose
// code is code, with the library's HOTP check (constant time).
func (m *MFA) match(sealed []byte, code string) (int64, bool, error) {
	code = strings.TrimSpace(code)
	if len(code) != totpDigits.Length() || strings.Trim(code, "0123456789") != "" {
		return 0, false, nil
	}
	secret, err := m.Secrets.Open(sealed)
	if err != nil {
		return 0, false, err
	}
	cur := m.now().Unix() / totpPeriod
	for _, step := range []int64{cur - 1, cur, cur + 1} {
		ok, err := hotp.ValidateCustom(code, uint64(step), secret,
			hotp.ValidateOpts{Digits: totpDigits, Algorithm: totpAlg})
		if err != nil {
			return 0, false, fmt.Errorf("auth: unable to check a code: %w", err)
		}
		if ok {
			return step, true, nil
		}
	}
	return 0, false, nil
}

// Recovery codes are 80 random bits in lowercase base32, written in four
// groups of four: a SHA-256 of them is as strong a store as an API key's.
var recoveryEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func newRecoveryCodes() []string {
	codes := make([]string, store.MFARecoveryCodes)
	for i := range codes {
		b := make([]byte, 10)
		if _, err := rand.Read(b); err != nil {
			panic("auth: crypto/rand failed: " + err.Error()) // unrecoverable on any supported OS
		}
		s := recoveryEncoding.EncodeToString(b)
		codes[i] = s[0:4] + "-" + s[4:8] + "-" + s[8:12] + "-" + s[12:16]
	}
	return codes
}

// normaliseRecoveryCode forgives case, spaces and dashes.
func normaliseRecoveryCode(code string) string {
	if len(code) > 4*MaxCodeLength {
		return ""
	}
	code = strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(code)))
	if len(code) != 16 {
		return code
	}
	return code[0:4] + "-" + code[4:8] + "-" + code[8:12] + "-" + code[12:16]
}
