package egress_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/tifeeds/tifeeds/ingest/egress"
)

// spell writes the IPv4 address a.b.c.d in one of the spellings that
// inet_aton-style parsers (and so some resolvers and browsers) accept.
func spell(a, b, c, d byte, style uint8) string {
	n := uint32(a)<<24 | uint32(b)<<16 | uint32(c)<<8 | uint32(d)
	switch style % 7 {
	case 0:
		return fmt.Sprintf("%d.%d.%d.%d", a, b, c, d)
	case 1:
		return fmt.Sprintf("%d", n)
	case 2:
		return fmt.Sprintf("0%o.0%o.0%o.0%o", a, b, c, d)
	case 3:
		return fmt.Sprintf("0x%x.0x%x.0x%x.0x%x", a, b, c, d)
	case 4:
		return fmt.Sprintf("%d.%d.%d", a, b, uint32(c)<<8|uint32(d))
	case 5:
		return fmt.Sprintf("%d.%d", a, n&0xffffff)
	default:
		return fmt.Sprintf("0x%x", n)
	}
}

// FuzzSpellingsJudgedAlike: however an IPv4 address is spelled, it is read
// as that address, so the policy cannot be passed by writing 127.0.0.1 as
// 0177.1 or 2130706433.
func FuzzSpellingsJudgedAlike(f *testing.F) {
	f.Add(byte(127), byte(0), byte(0), byte(1), uint8(1))
	f.Add(byte(169), byte(254), byte(169), byte(254), uint8(2))
	f.Add(byte(10), byte(1), byte(2), byte(3), uint8(5))
	f.Add(byte(192), byte(0), byte(2), byte(7), uint8(3))
	f.Fuzz(func(t *testing.T, a, b, c, d byte, style uint8) {
		want := netip.AddrFrom4([4]byte{a, b, c, d})
		host := spell(a, b, c, d, style)
		got, ok := egress.LegacyIPv4(host)
		if !ok || got != want {
			t.Fatalf("LegacyIPv4(%q) = %v, %v; want %v", host, got, ok, want)
		}
		if egress.Forbidden(got) != egress.Forbidden(want) {
			t.Fatalf("%q judged %q, %v judged %q", host, egress.Forbidden(got), want, egress.Forbidden(want))
		}
		mapped := netip.AddrFrom16(want.As16())
		if egress.Forbidden(mapped) != egress.Forbidden(want) {
			t.Fatalf("IPv4-mapped %v judged %q, %v judged %q", mapped, egress.Forbidden(mapped), want, egress.Forbidden(want))
		}
	})
}

// FuzzLegacyIPv4 reads any host name without panicking, and what it reads
// as an address is an IPv4 address.
func FuzzLegacyIPv4(f *testing.F) {
	for _, s := range []string{"127.1", "0x7f.1", "example.com", "1.2.3.4.5", "0xffffffff", "09.1.1.1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if a, ok := egress.LegacyIPv4(host); ok && !a.Is4() {
			t.Fatalf("LegacyIPv4(%q) = %v, not IPv4", host, a)
		}
	})
}
