package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
)

const defaultDB = "sqlite:data/tifeeds.db"

// dbFlag registers --db on fs.
func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", envDefault("TIFEEDS_DB", defaultDB),
		"database: sqlite:<path> or postgres://user:pass@host/db (TIFEEDS_DB)")
}

// openStore opens and migrates the database.
func openStore(ctx context.Context, dsn string, log *slog.Logger) (*store.Store, error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	applied, err := st.Migrate(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	if len(applied) > 0 {
		log.Info("Applied migrations", "count", len(applied), "migrations", applied)
	}
	return st, nil
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", envDefault("TIFEEDS_ADDR", cfg.Addr), "listen address (TIFEEDS_ADDR)")
	dsn := dbFlag(fs)
	fs.StringVar(&cfg.TLSCert, "tls-cert", envDefault("TIFEEDS_TLS_CERT", ""), "TLS certificate file; HTTPS when set (TIFEEDS_TLS_CERT)")
	fs.StringVar(&cfg.TLSKey, "tls-key", envDefault("TIFEEDS_TLS_KEY", ""), "TLS private key file (TIFEEDS_TLS_KEY)")
	edition := fs.String("edition", envDefault("TIFEEDS_EDITION", string(server.EditionOnPrem)), "onprem or saas (TIFEEDS_EDITION)")
	premiumBase := fs.String("premium-endpoint-base", envDefault("TIFEEDS_PREMIUM_ENDPOINT_BASE", ""),
		"when set, feed-list premium endpoints must be under this URL (TIFEEDS_PREMIUM_ENDPOINT_BASE)")
	requestTimeout := fs.Duration("request-timeout", cfg.RequestTimeout,
		"longest a request may work before it is stopped; exports and websockets excepted (TIFEEDS_REQUEST_TIMEOUT)")
	fs.IntVar(&cfg.MaxExports, "max-exports", envInt("TIFEEDS_MAX_EXPORTS", cfg.MaxExports),
		"IoC exports streaming at once, each on a database connection of its own; more are refused with 503 (TIFEEDS_MAX_EXPORTS)")
	fs.IntVar(&cfg.MaxExportsPerUser, "max-exports-per-user", envInt("TIFEEDS_MAX_EXPORTS_PER_USER", cfg.MaxExportsPerUser),
		"IoC exports one user may stream at once; more are refused with 429 (TIFEEDS_MAX_EXPORTS_PER_USER)")
	trusted := fs.String("trusted-proxies", envDefault("TIFEEDS_TRUSTED_PROXIES", ""),
		"comma-separated addresses or CIDR ranges of reverse proxies whose X-Forwarded-For names the client, for login throttling (TIFEEDS_TRUSTED_PROXIES)")
	auditDays := fs.Int("audit-retention-days", envInt("TIFEEDS_AUDIT_RETENTION_DAYS", 365),
		"days the audit log keeps a record (TIFEEDS_AUDIT_RETENTION_DAYS)")
	warmCacheEnv, err := envBool("TIFEEDS_WARM_CACHE", true)
	if err != nil {
		return err
	}
	warmCache := fs.Bool("warm-cache", warmCacheEnv,
		"read the SQLite database's pages that are not in memory at start, or ready PostgreSQL's first connections, in the background (TIFEEDS_WARM_CACHE)")
	logFormat := fs.String("log-format", envDefault("TIFEEDS_LOG_FORMAT", "text"), "text or json (TIFEEDS_LOG_FORMAT)")
	allowPrivateEnv, err := envBool("TIFEEDS_FEED_ALLOW_PRIVATE", false)
	if err != nil {
		return err
	}
	allowPrivate := fs.Bool("feed-allow-private", allowPrivateEnv,
		"let feeds fetch from loopback, private, link-local and other internal addresses, refused by default (TIFEEDS_FEED_ALLOW_PRIVATE)")
	cookieSecure, err := envBool("TIFEEDS_COOKIE_SECURE", false)
	if err != nil {
		return err
	}
	fs.BoolVar(&cfg.CookieSecure, "cookie-secure", cookieSecure,
		"mark the session cookie Secure though serving plain HTTP, behind a TLS-terminating proxy (TIFEEDS_COOKIE_SECURE)")
	allowedOrigins := fs.String("allowed-origins", envDefault("TIFEEDS_ALLOWED_ORIGINS", ""),
		"comma-separated origins (https://host[:port]) the dashboard is reached at, when a reverse proxy rewrites Host (TIFEEDS_ALLOWED_ORIGINS)")
	fs.StringVar(&cfg.PublicURL, "public-url", envDefault("TIFEEDS_PUBLIC_URL", ""),
		"URL clients reach tifeeds at (https://host[:port][/prefix]), for the links it hands out such as TAXII discovery's API root and the SAML SSO URLs; empty: relative links, and no SSO (TIFEEDS_PUBLIC_URL)")
	allowedHosts := fs.String("allowed-hosts", envDefault("TIFEEDS_ALLOWED_HOSTS", ""),
		"comma-separated host names the dashboard is reached at besides IP addresses, localhost and the hosts of --allowed-origins and --public-url; "+
			"requests with the session cookie naming another Host are refused (TIFEEDS_ALLOWED_HOSTS)")
	// No default shown: --help would print the token.
	metricsToken := fs.String("metrics-token", "",
		"bearer token /metrics requires; unset, /metrics is open to whoever reaches the port (TIFEEDS_METRICS_TOKEN)")
	mirror := fs.String("feed-mirror", envDefault("TIFEEDS_FEED_MIRROR", ""),
		"send every request of the built-in feeds and premium vendor clients to <URL>/<host><path>?<query>, for an egress mirror or tests (TIFEEDS_FEED_MIRROR)")
	writeRate := fs.Float64("risk-list-rate", envFloat("TIFEEDS_RISK_LIST_RATE", ingest.DefaultWriteRate),
		"indicators per hour at which a risk-list feed writes its lists, spread over its polls; the default writes 1,000,000 in six days (TIFEEDS_RISK_LIST_RATE)")
	smtpURL := fs.String("smtp-url", "",
		"SMTP server of email notifications: smtp://[user:pass@]host[:587] (STARTTLS) or smtps://[user:pass@]host[:465] (TIFEEDS_SMTP_URL)")
	smtpUser := fs.String("smtp-user", envDefault("TIFEEDS_SMTP_USER", ""), "SMTP user, instead of the URL's (TIFEEDS_SMTP_USER)")
	smtpPassword := fs.String("smtp-password", "", "SMTP password, instead of the URL's (TIFEEDS_SMTP_PASSWORD)")
	smtpFrom := fs.String("smtp-from", envDefault("TIFEEDS_SMTP_FROM", ""),
		"sender address of email notifications; tifeeds@<SMTP host> when unset (TIFEEDS_SMTP_FROM)")
	notifyLease := fs.Duration("notify-lease", envDuration("TIFEEDS_NOTIFY_LEASE", notify.DefaultLease),
		fmt.Sprintf("how long a claimed notification is its worker's: another instance sends it once a killed worker's lease ends; at least %s, longer than any attempt (TIFEEDS_NOTIFY_LEASE)", notify.MinLease))
	// The keys' flags have no default: --help would print it. The
	// environment is read after parsing.
	keyFlags := map[builtin.Key]*string{}
	for _, k := range builtin.Keys {
		keyFlags[k] = fs.String(k.Flag, "", "key of the built-in feeds that read "+keyUsers(k)+" ("+k.Env+")")
	}
	if err = fs.Parse(args); err != nil {
		return err
	}
	for k, v := range keyFlags {
		if !flagSet(fs, k.Flag) {
			*v = envDefault(k.Env, "")
		}
	}
	// Like the keys, the SMTP URL (it may hold a password) and password
	// have no default --help would print.
	if !flagSet(fs, "smtp-url") {
		*smtpURL = envDefault("TIFEEDS_SMTP_URL", "")
	}
	if !flagSet(fs, "smtp-password") {
		*smtpPassword = envDefault("TIFEEDS_SMTP_PASSWORD", "")
	}
	if *notifyLease < notify.MinLease {
		return fmt.Errorf("--notify-lease %s: at least %s (longer than a webhook's or an email's attempt)", *notifyLease, notify.MinLease)
	}
	var mailer *notify.SMTP
	if *smtpURL != "" {
		if mailer, err = notify.ParseSMTP(*smtpURL, *smtpUser, *smtpPassword, *smtpFrom); err != nil {
			return err
		}
	}
	if !flagSet(fs, "metrics-token") {
		*metricsToken = envDefault("TIFEEDS_METRICS_TOKEN", "")
	}
	cfg.MetricsToken = strings.TrimSpace(*metricsToken)
	keys := ingest.BuiltinKeys{OTX: *keyFlags[builtin.OTXKey], AbuseCH: *keyFlags[builtin.AbuseCHKey],
		PhishTank: *keyFlags[builtin.PhishTankKey], ETReputation: *keyFlags[builtin.ETReputationKey]}
	if *auditDays < 1 {
		return fmt.Errorf("--audit-retention-days must be at least 1, not %d", *auditDays)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected arguments %v", fs.Args())
	}
	if v := envDefault("TIFEEDS_REQUEST_TIMEOUT", ""); v != "" && !flagSet(fs, "request-timeout") {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("TIFEEDS_REQUEST_TIMEOUT: %w", err)
		}
		*requestTimeout = d
	}
	cfg.RequestTimeout = *requestTimeout
	if cfg.TrustedProxies, err = parsePrefixes(*trusted); err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	cfg.Edition = server.Edition(*edition)
	if cfg.Edition != server.EditionOnPrem && cfg.Edition != server.EditionSaaS {
		return fmt.Errorf("--edition must be onprem or saas, not %q", *edition)
	}
	for _, o := range strings.Split(*allowedOrigins, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("--allowed-origins: %q is not an origin like https://tifeeds.example.com", o)
		}
		cfg.AllowedOrigins = append(cfg.AllowedOrigins, o)
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("--public-url: %q is not a URL like https://tifeeds.example.com", cfg.PublicURL)
		}
	}
	for _, h := range strings.Split(*allowedHosts, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if strings.ContainsAny(h, "/@ ") {
			return fmt.Errorf("--allowed-hosts: %q is not a host name like tifeeds.example.com", h)
		}
		cfg.AllowedHosts = append(cfg.AllowedHosts, h)
	}
	vendorClient, err := egress.NewVendorClient(egress.Options{AllowPrivate: *allowPrivate}, *mirror)
	if err != nil {
		return err
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	log, err := newLogger(*logFormat, stderr)
	if err != nil {
		return err
	}
	slog.SetDefault(log)

	st, err := openStore(ctx, *dsn, log)
	if err != nil {
		return err
	}
	defer st.Close()
	// Before the first request: its plans need the tables' statistics.
	analyseStart := time.Now()
	analysed, err := st.RefreshStatistics(ctx)
	if err != nil {
		return err
	}
	if len(analysed) > 0 {
		log.Info("Analysed the tables whose statistics were stale", "tables", analysed, "took", time.Since(analyseStart).Round(time.Millisecond))
	}
	st.StartSearchSample()
	if *warmCache {
		go warmDatabase(ctx, st, log)
	}

	admin, err := st.EnsureAdmin(ctx,
		envDefault("TIFEEDS_ADMIN_USER", "admin"),
		envDefault("TIFEEDS_ADMIN_PASSWORD", ""),
		envDefault("TIFEEDS_ADMIN_API_KEY", ""))
	if err != nil {
		return err
	}
	if admin.Created {
		printAdmin(stdout, admin)
		log.Info("Created admin user", "username", admin.Username)
	}

	// On PostgreSQL the bus also reaches the other instances sharing the
	// database. Not tied to ctx: it keeps relaying the runner's last
	// events while the runner stops, and stops after it (defers run last
	// in, first out), before the store closes.
	bus := events.NewBus()
	fanout, err := events.NewFanout(events.FanoutOptions{Store: st, Bus: bus, Log: log})
	if err != nil {
		return err
	}
	fanout.Start(context.WithoutCancel(ctx))
	defer fanout.Stop()

	if *allowPrivate {
		log.Warn("Feeds may fetch from private and loopback addresses", "setting", "feed-allow-private")
	}
	feedClient := egress.NewClient(egress.Options{AllowPrivate: *allowPrivate})
	if *mirror != "" {
		log.Info("Vendor requests go to the feed mirror", "mirror", ioc.MaskURL(*mirror))
	}
	auditLog := audit.New(st, log)
	notes, err := newNotifications(ctx, st, *dsn, bus, log, auditLog, mailer, egress.Options{AllowPrivate: *allowPrivate}, *notifyLease)
	if err != nil {
		return err
	}
	runner, feedService, err := startRunner(ctx, st, *dsn, *premiumBase, bus, log, auditLog, notes.Assets,
		time.Duration(*auditDays)*24*time.Hour,
		ingest.RegistryOptions{Client: feedClient, VendorClient: vendorClient, Keys: keys},
		ingest.KindOptions{WriteRate: *writeRate})
	if err != nil {
		return err
	}
	// Deferred after st.Close, so it runs first: runs reach a safe point
	// while the store is still open.
	defer stopRunner(runner, log)
	// Started after the runner, stopped before it (and before the store).
	notes.Assets.Allowlist = runner.Allowlist()
	stopNotes, err := notes.start(ctx)
	if err != nil {
		return err
	}
	defer stopNotes()

	// TOTP secrets are sealed with the key that seals feed credentials.
	secrets, err := store.LoadSecrets(*dsn)
	if err != nil {
		return err
	}
	resolver := &graph.Resolver{Store: st, SaaS: cfg.Edition == server.EditionSaaS, Events: runner.Bus(), Ingest: runner, Feeds: feedService,
		Audit: auditLog, MFA: &auth.MFA{Store: st, Secrets: secrets}, Notify: notes.Notifications}
	srv := server.New(cfg, st, resolver, log)
	err = srv.ListenAndServe(ctx)
	log.Info("Stopped")
	return err
}

// envFloat reads a number from the environment; unset, empty or not a
// positive number is def (the flag's parsing then reports nothing wrong:
// a bad value falls back, said in the log by the runner's default).
func envFloat(name string, def float64) float64 {
	if f, err := strconv.ParseFloat(envDefault(name, ""), 64); err == nil && f > 0 {
		return f
	}
	return def
}

// envDuration reads a duration (such as 90s or 2m) from the environment;
// unset, empty or not a positive duration is def, as envFloat.
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(envDefault(name, "")); err == nil && d > 0 {
		return d
	}
	return def
}

// envInt reads a count from the environment; unset, empty or not a
// positive integer is def, as envFloat.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(envDefault(name, "")); err == nil && n > 0 {
		return n
	}
	return def
}

// envBool reads a boolean environment variable; unset or empty is def.
func envBool(name string, def bool) (bool, error) {
	v := envDefault(name, "")
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s must be true or false, not %q", name, v)
	}
	return b, nil
}

// printAdmin shows the generated first-run credentials once; values the
// operator set through the environment are not echoed.
func printAdmin(w io.Writer, a store.AdminCredentials) {
	if a.Password == "" && a.APIKey == "" {
		return
	}
	fmt.Fprintln(w, "==================================================================")
	fmt.Fprintln(w, " tifeeds first start: admin user created. Save these now; they are")
	fmt.Fprintln(w, " shown only once.")
	fmt.Fprintf(w, "   username: %s\n", a.Username)
	if a.Password != "" {
		fmt.Fprintf(w, "   password: %s\n", a.Password)
	}
	if a.APIKey != "" {
		fmt.Fprintf(w, "   API key:  %s\n", a.APIKey)
	}
	fmt.Fprintln(w, "==================================================================")
}

// keyUsers names the services that read key k.
func keyUsers(k builtin.Key) string {
	var names []string
	for _, s := range builtin.Specs() {
		if s.Key == k {
			names = append(names, s.Service)
		}
	}
	return strings.Join(names, " and ")
}

// startRunner builds the feed runner with the kinds of this build and the
// feed service over it, delivers the built-in and premium feeds and starts
// scheduling. Every source of URLs users type fetches through ro.Client,
// the egress policy's client; the vendor sources through ro.VendorClient
// (the policy and the feed mirror).
func startRunner(ctx context.Context, st *store.Store, dsn, premiumBase string, bus *events.Bus, log *slog.Logger,
	auditLog *audit.Log, assets ingest.AssetWatch, auditRetention time.Duration, ro ingest.RegistryOptions, ko ingest.KindOptions) (*ingest.Runner, *feeds.Service, error) {
	secrets, err := store.LoadSecrets(dsn)
	if err != nil {
		return nil, nil, err
	}
	sources := ingest.NewRegistry(ro)
	sources.Register(ingest.Kinds(ko)...)
	runner, err := ingest.New(ingest.Options{Store: st, Secrets: secrets, Bus: bus, Sources: sources, Log: log,
		AuditRetention: auditRetention, Assets: assets})
	if err != nil {
		return nil, nil, err
	}
	service, err := feeds.New(feeds.Options{Store: st, Secrets: secrets, Bus: bus, Sources: sources, Runner: runner,
		Allowlist: runner.Allowlist(), Log: log, PremiumEndpointBase: premiumBase, Audit: auditLog})
	if err != nil {
		return nil, nil, err
	}
	if err := runner.EnsureBuiltinFeeds(ctx); err != nil {
		return nil, nil, err
	}
	if err := service.EnsurePremiumFeeds(ctx); err != nil {
		return nil, nil, err
	}
	if err := runner.Start(ctx); err != nil {
		return nil, nil, err
	}
	return runner, service, nil
}

// stopRunner lets feed runs reach a safe point, then stops the scheduler.
func stopRunner(r *ingest.Runner, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), ingest.DefaultStopGrace+10*time.Second)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		log.Error("Unable to stop the feed runner", "error", err)
	}
}

// flagSet reports whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// parsePrefixes reads "10.0.0.1, 192.168.0.0/16": single addresses become
// one-address prefixes.
func parsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR range", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// warmDatabase has the SQLite database's files read into the page cache,
// or PostgreSQL's first connections readied (Store.WarmCache), so that the
// first requests after a start do not each wait for them, and says what
// it did.
func warmDatabase(ctx context.Context, st *store.Store, log *slog.Logger) {
	start := time.Now()
	w, err := st.WarmCache(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("Unable to read the database into memory", "err", err)
	case w.Skipped != "" && w.Size > 0:
		log.Info("Left the database to be read into memory as requests need it", "reason", w.Skipped)
	case w.Read > 0:
		log.Info("Read the database into memory", "read_mb", w.Read>>20, "size_mb", w.Size>>20, "took", time.Since(start).Round(time.Millisecond))
	case w.Connections > 0:
		log.Info("Readied the database's connections", "connections", w.Connections, "took", time.Since(start).Round(time.Millisecond))
	}
}
