package server

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/store"
)

// LoginLimits throttle password logins and bound their bcrypt work.
type LoginLimits struct {
	// MaxFailuresPerUser and MaxFailuresPerAddr failed logins within
	// Window lock that user name, or that client address, out until the
	// window ends (429 with Retry-After).
	MaxFailuresPerUser int
	MaxFailuresPerAddr int
	Window             time.Duration
	// MaxTracked bounds the names and addresses remembered; past it, new
	// names are not tracked (addresses still are, up to twice as many).
	MaxTracked int
	// Hashing is how many bcrypt comparisons may run at once, so logins can
	// never take every core from API requests; HashQueue is how many more
	// logins may wait for one before they are refused with 503.
	Hashing   int
	HashQueue int
}

// DefaultLoginLimits: half the cores for bcrypt (one on two cores).
func DefaultLoginLimits() LoginLimits {
	return LoginLimits{
		MaxFailuresPerUser: 5,
		MaxFailuresPerAddr: 20,
		Window:             15 * time.Minute,
		MaxTracked:         100_000,
		Hashing:            max(1, runtime.NumCPU()/2),
		HashQueue:          32,
	}
}

// loginGuard holds the login throttle's state and the bcrypt semaphore.
type loginGuard struct {
	limits  LoginLimits
	hashing chan struct{}
	waiting atomic.Int64
	// inFlight counts login requests being served, body reading included.
	inFlight atomic.Int64

	mu    sync.Mutex
	users map[string]*failures
	addrs map[string]*failures
}

type failures struct {
	count int
	until time.Time // end of the window that began with the first failure
}

func newLoginGuard(l LoginLimits) *loginGuard {
	return &loginGuard{limits: l, hashing: make(chan struct{}, max(1, l.Hashing)),
		users: map[string]*failures{}, addrs: map[string]*failures{}}
}

// retryAfter says how long the name or the address is locked out; zero
// when neither is.
func (g *loginGuard) retryAfter(user, addr string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var wait time.Duration
	if f := g.users[user]; f != nil && f.count >= g.limits.MaxFailuresPerUser && now.Before(f.until) {
		wait = f.until.Sub(now)
	}
	if f := g.addrs[addr]; f != nil && f.count >= g.limits.MaxFailuresPerAddr && now.Before(f.until) {
		wait = max(wait, f.until.Sub(now))
	}
	return wait
}

// failed records a failed login of user from addr.
func (g *loginGuard) failed(user, addr string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.count(g.users, user, g.limits.MaxTracked, now)
	g.count(g.addrs, addr, 2*g.limits.MaxTracked, now)
}

func (g *loginGuard) count(m map[string]*failures, key string, limit int, now time.Time) {
	f := m[key]
	if f == nil {
		if len(m) >= limit {
			for k, e := range m {
				if !now.Before(e.until) {
					delete(m, k)
				}
			}
			if len(m) >= limit {
				return
			}
		}
		f = &failures{}
		m[key] = f
	}
	if !now.Before(f.until) {
		f.count, f.until = 0, now.Add(g.limits.Window)
	}
	f.count++
}

// succeeded forgets the name's failures; the address's stay, so one good
// account does not reset a guessing client.
func (g *loginGuard) succeeded(user string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.users, user)
}

// acquireHashing waits for a bcrypt slot. It fails at once when the queue
// is full, or when ctx ends first.
func (g *loginGuard) acquireHashing(ctx context.Context) (release func(), ok bool) {
	release = func() { <-g.hashing }
	select {
	case g.hashing <- struct{}{}:
		return release, true
	default:
	}
	if g.waiting.Add(1) > int64(g.limits.HashQueue) {
		g.waiting.Add(-1)
		return nil, false
	}
	defer g.waiting.Add(-1)
	select {
	case g.hashing <- struct{}{}:
		return release, true
	case <-ctx.Done():
		return nil, false
	}
}

// retryAfterHeader writes d as whole seconds, rounded up.
func retryAfterHeader(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(d.Seconds())))))
}

// clientAddr is who sent the request, for throttling: the peer, unless the
// peer is a trusted proxy, in which case the last X-Forwarded-For entry
// that is not one. Untrusted peers' X-Forwarded-For is ignored, as anyone
// can write it. IPv6 clients are grouped by /64, which one host usually
// has whole.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	addr := peerAddr(r.RemoteAddr)
	if len(trusted) > 0 && addr.IsValid() && isTrusted(addr, trusted) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break
			}
			addr = hop.Unmap()
			if !isTrusted(addr, trusted) {
				break
			}
		}
	}
	if !addr.IsValid() {
		return r.RemoteAddr
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// checkLogin checks a password under the throttle and the bcrypt bound,
// and answers the request itself when it fails.
func (s *Server) checkLogin(w http.ResponseWriter, r *http.Request, req loginRequest) (*store.User, bool) {
	for field, v := range map[string]string{"username": req.Username, "password": req.Password} {
		if err := graph.CheckString(field, v); err != nil {
			writeRESTErr(w, r, badRequest("invalid_string", field, "%s", err.Error()), nil)
			return nil, false
		}
	}
	addr := clientAddr(r, s.cfg.TrustedProxies)
	if wait := s.logins.retryAfter(req.Username, addr, time.Now()); wait > 0 {
		retryAfterHeader(w, wait)
		writeError(w, http.StatusTooManyRequests, "too_many_logins", "too many failed logins; retry later")
		return nil, false
	}
	release, ok := s.logins.acquireHashing(r.Context())
	if !ok {
		retryAfterHeader(w, time.Second)
		writeError(w, http.StatusServiceUnavailable, "busy", "too many logins in progress; retry shortly")
		return nil, false
	}
	u, err := s.store.CheckPassword(r.Context(), req.Username, req.Password)
	release()
	switch {
	case errors.Is(err, store.ErrBadCredentials):
		s.logins.failed(req.Username, addr, time.Now())
		writeError(w, http.StatusUnauthorized, "unauthenticated", "wrong username or password")
		return nil, false
	case err != nil:
		writeErr(w, r, err)
		return nil, false
	}
	s.logins.succeeded(req.Username)
	return u, true
}
