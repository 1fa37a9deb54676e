package ioc

import (
	"fmt"
	"net/netip"
	"strings"
)

// Detect reads a raw value of unknown kind, as an analyst pastes it, and
// returns its kind and normalised value. It tries, in order: a URL (has a
// scheme), a hash (hex of 32, 40 or 64 digits), an IP address, a domain.
// Defanged forms common in reports ("hxxp://", "example[.]com") are read as
// their live form.
func Detect(raw string) (Kind, string, error) {
	v := refang(strings.TrimSpace(raw))
	if v == "" {
		return "", "", fmt.Errorf("%w: empty value", ErrInvalid)
	}
	kind, hash := HashKind(v)
	switch {
	case strings.Contains(v, "://"):
		kind = URL
	case hash && isHexString(v):
		// kind is the hash's
	default:
		if _, err := netip.ParseAddr(v); err == nil {
			kind = IP
		} else {
			kind = Domain
		}
	}
	value, err := Normalize(kind, v)
	if err != nil {
		return "", "", err
	}
	return kind, value, nil
}

var refanger = strings.NewReplacer("[.]", ".", "(.)", ".", "[:]", ":", "hxxp", "http", "hXXp", "http", "[://]", "://")

func refang(v string) string { return refanger.Replace(v) }

func isHexString(v string) bool {
	for i := 0; i < len(v); i++ {
		if !isHex(v[i]) {
			return false
		}
	}
	return true
}
