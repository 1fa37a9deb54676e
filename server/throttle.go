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

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/input"
	"github.com/tifeeds/tifeeds/store"
)

// LoginLimits throttle password logins and bound their bcrypt work.
type LoginLimits struct {
	// MaxFailuresPerUserAddr failed logins of one user name from one client
	// address within Window lock that name out for that address until the
	// window ends (429 with Retry-After); from other addresses the name
	// still gets in, so nobody can keep a user out by failing on purpose.
	MaxFailuresPerUserAddr int
	// MaxFailuresPerAddr failed logins from one address, whatever the
	// names, lock that address out.
	MaxFailuresPerAddr int
	// MaxFailuresPerUser failed logins of one name, whatever the
	// addresses, lock that name out everywhere: a ceiling against guessing
	// spread over many addresses, high enough that reaching it takes many
	// addresses (MaxFailuresPerUser / MaxFailuresPerUserAddr at least).
	MaxFailuresPerUser int
	Window             time.Duration
	// MaxTracked bounds the names and the (name, address) pairs
	// remembered; past it, new ones are not tracked (addresses still are,
	// up to twice as many).
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
		MaxFailuresPerUserAddr: 5,
		MaxFailuresPerAddr:     20,
		MaxFailuresPerUser:     100,
		Window:                 15 * time.Minute,
		MaxTracked:             100_000,
		Hashing:                max(1, runtime.NumCPU()/2),
		HashQueue:              32,
	}
}

// loginGuard holds the login throttle's state and the bcrypt semaphore.
type loginGuard struct {
	limits  LoginLimits
	hashing chan struct{}
	waiting atomic.Int64
	// inFlight counts logins past reading their body.
	inFlight atomic.Int64

	mu    sync.Mutex
	pairs map[userAddr]*failures
	users map[string]*failures
	addrs map[string]*failures
}

type userAddr struct{ user, addr string }

type failures struct {
	count int
	until time.Time // end of the window that began with the first failure
}

func newLoginGuard(l LoginLimits) *loginGuard {
	return &loginGuard{limits: l, hashing: make(chan struct{}, max(1, l.Hashing)),
		pairs: map[userAddr]*failures{}, users: map[string]*failures{}, addrs: map[string]*failures{}}
}

// loginAttempt is an attempt reserved against the throttle: counted as a
// failure until cancel or succeeded says otherwise.
type loginAttempt struct {
	g       *loginGuard
	user    string
	addr    string
	counted []countedIn
	done    bool
}

// countedIn is a window an attempt was counted in.
type countedIn struct {
	f     *failures
	until time.Time
}

// reserve counts an attempt of user from addr as a failure before its
// password is checked, in the same critical section as the check of the
// limits: concurrent guesses cannot all pass the check before any is
// counted. It returns how long the attempt must wait instead when the
// name, the address or the pair is locked out.
func (g *loginGuard) reserve(user, addr string, now time.Time) (*loginAttempt, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	pair, byUser, byAddr := g.pairs[userAddr{user, addr}], g.users[user], g.addrs[addr]
	wait := max(lockedFor(pair, g.limits.MaxFailuresPerUserAddr, now),
		lockedFor(byUser, g.limits.MaxFailuresPerUser, now),
		lockedFor(byAddr, g.limits.MaxFailuresPerAddr, now))
	if wait > 0 {
		return nil, wait
	}
	a := &loginAttempt{g: g, user: user, addr: addr}
	for _, f := range []*failures{
		count(g.pairs, userAddr{user, addr}, g.limits.MaxTracked, g.limits.Window, now),
		count(g.users, user, g.limits.MaxTracked, g.limits.Window, now),
		count(g.addrs, addr, 2*g.limits.MaxTracked, g.limits.Window, now),
	} {
		if f != nil {
			a.counted = append(a.counted, countedIn{f, f.until})
		}
	}
	return a, 0
}

// lockedFor is how long f's window still runs once it holds limit
// failures; zero when it does not.
func lockedFor(f *failures, limit int, now time.Time) time.Duration {
	if f == nil || f.count < limit || !now.Before(f.until) {
		return 0
	}
	return f.until.Sub(now)
}

// count adds a failure to key's window, opening one if needed, and returns
// it; nil when the map is full of live windows.
func count[K comparable](m map[K]*failures, key K, limit int, window time.Duration, now time.Time) *failures {
	f := m[key]
	if f == nil {
		if len(m) >= limit {
			for k, e := range m {
				if !now.Before(e.until) {
					delete(m, k)
				}
			}
			if len(m) >= limit {
				return nil
			}
		}
		f = &failures{}
		m[key] = f
	}
	if !now.Before(f.until) {
		f.count, f.until = 0, now.Add(window)
	}
	f.count++
	return f
}

// cancel takes back the attempt's reservation: its password was never
// found wrong (busy, the database failed).
func (a *loginAttempt) cancel() {
	a.g.mu.Lock()
	defer a.g.mu.Unlock()
	a.uncount()
}

func (a *loginAttempt) uncount() {
	if a.done {
		return
	}
	a.done = true
	for _, c := range a.counted {
		// A window that ended since is a fresh count, not ours to lower.
		if c.f.until.Equal(c.until) {
			c.f.count = max(0, c.f.count-1)
		}
	}
}

// succeeded takes back the reservation and forgets the pair's failures,
// so a user who mistyped starts over; the name's and the address's other
// failures stay, so one good login does not reset a guessing client or a
// guessing spread over many.
func (a *loginAttempt) succeeded() {
	a.g.mu.Lock()
	defer a.g.mu.Unlock()
	a.uncount()
	delete(a.g.pairs, userAddr{a.user, a.addr})
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
	addr := clientIP(r, trusted)
	if !addr.IsValid() {
		return r.RemoteAddr
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

// clientIP is the client's address as clientAddr finds it, whole (the
// audit log names it); invalid when the peer's address cannot be read.
func clientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
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
	return addr
}

// auditClient is the client address the audit log records.
func (s *Server) auditClient(r *http.Request) string {
	if a := clientIP(r, s.cfg.TrustedProxies); a.IsValid() {
		return a.String()
	}
	return r.RemoteAddr
}

// withAuditClient puts the client's address in the request context, for
// the audit records of the changes the request makes.
func (s *Server) withAuditClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(audit.WithClient(r.Context(), s.auditClient(r))))
	})
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
		if err := input.CheckString(field, v); err != nil {
			writeRESTErr(w, r, err, nil)
			return nil, false
		}
	}
	addr := clientAddr(r, s.cfg.TrustedProxies)
	attempt, wait := s.logins.reserve(req.Username, addr, time.Now())
	if wait > 0 {
		retryAfterHeader(w, wait)
		writeError(w, http.StatusTooManyRequests, "too_many_logins", "too many failed logins; retry later")
		return nil, false
	}
	release, ok := s.logins.acquireHashing(r.Context())
	if !ok {
		attempt.cancel()
		retryAfterHeader(w, time.Second)
		writeError(w, http.StatusServiceUnavailable, "busy", "too many logins in progress; retry shortly")
		return nil, false
	}
	s.metrics.passwordChecks.Inc()
	u, err := s.accounts.CheckPassword(r.Context(), req.Username, req.Password)
	release()
	switch {
	case errors.Is(err, store.ErrBadCredentials):
		// The reservation stands as the failure. The name tried is the
		// record's actor; the password is never recorded.
		s.resolver.Audit.RecordAs(r.Context(), nil, req.Username, audit.SignInFailed,
			audit.Target{Type: audit.TargetUser, Name: req.Username}, map[string]any{"method": "password"})
		writeError(w, http.StatusUnauthorized, "unauthenticated", "wrong username or password")
		return nil, false
	case err != nil:
		attempt.cancel()
		writeErr(w, r, err)
		return nil, false
	}
	attempt.succeeded()
	return u, true
}
