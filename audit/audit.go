// Package audit records who changed what: every change through the APIs or
// the CLI, and every sign-in and refused sign-in, with the actor and client
// address taken from the request context. Services and edges call Record;
// the store keeps the records (store.AuditEvent), append-only.
package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/store"
)

// Actions. A new kind of change gets its name here, so the dashboard's
// filter and the log's readers share one vocabulary.
const (
	FeedCreate        = "feed.create"
	FeedUpdate        = "feed.update"
	FeedEnable        = "feed.enable"
	FeedDisable       = "feed.disable"
	FeedDelete        = "feed.delete"
	FeedReset         = "feed.reset"
	FeedRunNow        = "feed.run_now"
	AllowlistAdd      = "allowlist.add"
	AllowlistDelete   = "allowlist.delete"
	WarninglistAction = "warninglist.action"
	WarninglistImport = "warninglist.import"
	WarninglistDelete = "warninglist.delete"
	TenantCreate      = "tenant.create"
	TenantUpdate      = "tenant.update"
	TenantDelete      = "tenant.delete"
	TenantGroupCreate = "tenant_group.create"
	TenantGroupUpdate = "tenant_group.update"
	TenantGroupDelete = "tenant_group.delete"
	ViewSave          = "view.save"
	ViewDelete        = "view.delete"
	APIKeyCreate      = "api_key.create"
	APIKeyRevoke      = "api_key.revoke"
	UserCreate        = "user.create"
	UserUpdate        = "user.update"
	UserEnable        = "user.enable"
	UserDisable       = "user.disable"
	UserDelete        = "user.delete"
	UserPasswordReset = "user.password_reset"
	UserMFAReset      = "user.mfa_reset"
	ChannelCreate     = "notify_channel.create"
	ChannelDelete     = "notify_channel.delete"
	ChannelTest       = "notify_channel.test"
	AssetsAdd         = "tenant_assets.add"
	AssetsDelete      = "tenant_assets.delete"
	FeedHealthSet     = "feed.health_threshold"
	SignIn            = "auth.sign_in"
	SignInFailed      = "auth.sign_in_failed"
	SSORefused        = "auth.sso_refused"
	MFARefused        = "auth.mfa_refused"
)

// Target types.
const (
	TargetFeed        = "feed"
	TargetAllowlist   = "allowlist_entry"
	TargetWarninglist = "warninglist"
	TargetTenant      = "tenant"
	TargetTenantGroup = "tenant_group"
	TargetView        = "view"
	TargetAPIKey      = "api_key"
	TargetUser        = "user"
	TargetChannel     = "notify_channel"
)

// Actors that are not users.
const (
	ActorCLI    = "cli"
	ActorSystem = "system"
)

// Masked replaces a secret's value in a record.
const Masked = "***"

// Target is what a change was made to.
type Target struct {
	Type string
	ID   string
	Name string
}

// Recorder is what the log needs of the store.
type Recorder interface {
	RecordAudit(ctx context.Context, e *store.AuditEvent) error
}

// Log records audit events. A nil *Log records nothing (tests that do not
// look at the log need not build one).
type Log struct {
	rec Recorder
	log *slog.Logger
}

// New returns a log writing to rec.
func New(rec Recorder, log *slog.Logger) *Log {
	if log == nil {
		log = slog.Default()
	}
	return &Log{rec: rec, log: log}
}

type clientKey struct{}
type cliKey struct{}

// WithClient returns ctx carrying the client address the records of its
// changes name.
func WithClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientKey{}, addr)
}

// WithCLI returns ctx whose changes are recorded as the CLI's.
func WithCLI(ctx context.Context) context.Context {
	return context.WithValue(ctx, cliKey{}, true)
}

// Record appends a record of action on target by the caller in ctx, with
// the fields changed (masked by Fields' rules whatever the caller passed).
// A change is recorded after it is made; a record that cannot be written
// is logged as an error, and the change stands (see docs/decisions.md).
func (l *Log) Record(ctx context.Context, action string, target Target, fields map[string]any) {
	e := &store.AuditEvent{Action: action, TargetType: target.Type, TargetID: target.ID, TargetName: target.Name}
	e.Client, _ = ctx.Value(clientKey{}).(string)
	switch u, err := auth.UserFrom(ctx); {
	case err == nil:
		e.ActorID, e.Actor = &u.ID, u.Username
	case ctx.Value(cliKey{}) != nil:
		e.Actor = ActorCLI
	default:
		e.Actor = ActorSystem
	}
	l.write(ctx, e, fields)
}

// RecordAs is Record for an actor the context does not carry yet: a
// sign-in, whose user (or the name tried) is the actor.
func (l *Log) RecordAs(ctx context.Context, actorID *int64, actor, action string, target Target, fields map[string]any) {
	e := &store.AuditEvent{Action: action, TargetType: target.Type, TargetID: target.ID, TargetName: target.Name,
		ActorID: actorID, Actor: actor}
	e.Client, _ = ctx.Value(clientKey{}).(string)
	l.write(ctx, e, fields)
}

func (l *Log) write(ctx context.Context, e *store.AuditEvent, fields map[string]any) {
	if l == nil {
		return
	}
	b, err := json.Marshal(mask(fields))
	if err != nil {
		b = []byte(`{}`)
	}
	e.Fields = string(b)
	// The change is made: the record is written even if the request that
	// made it is cancelled now.
	if err := l.rec.RecordAudit(context.WithoutCancel(ctx), e); err != nil {
		l.log.ErrorContext(ctx, "Unable to record an audit event", "action", e.Action, "target", e.TargetType,
			"target_id", e.TargetID, "error", err)
	}
}

// secretWords mark the fields whose values a record never shows: a field
// whose name holds one of them is masked.
var secretWords = []string{"password", "secret", "apikey", "api_key", "key", "token", "endpoint", "credential"}

// IsSecret reports whether a field of this name is masked.
func IsSecret(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

func mask(fields map[string]any) map[string]any {
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		if IsSecret(k) {
			if s, ok := v.(string); ok && s == "" {
				out[k] = "" // cleared: saying so shows nothing
				continue
			}
			v = Masked
		}
		out[k] = v
	}
	return out
}

// Fields turns an input struct into the fields of a record: its exported
// fields (camelCase names), without the nil pointers (fields not changed),
// pointers followed, secrets masked.
func Fields(v any) map[string]any {
	out := map[string]any{}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return out
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return out
	}
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := rv.Field(i)
		if fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Interface {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		if set, null, val, ok := opt(fv); ok { // a store.Opt
			switch {
			case !set:
				continue
			case null:
				out[camel(f.Name)] = nil
			default:
				out[camel(f.Name)] = val
			}
			continue
		}
		out[camel(f.Name)] = fv.Interface()
	}
	return mask(out)
}

func camel(s string) string {
	r := []rune(s)
	for i := range r {
		if !unicode.IsUpper(r[i]) || (i > 0 && i+1 < len(r) && !unicode.IsUpper(r[i+1])) {
			break
		}
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}

// opt reads a store.Opt[T] (Set, Null, Value) without naming its T.
func opt(v reflect.Value) (set, null bool, val any, ok bool) {
	if v.Kind() != reflect.Struct || !strings.HasPrefix(v.Type().Name(), "Opt[") {
		return false, false, nil, false
	}
	s, n, x := v.FieldByName("Set"), v.FieldByName("Null"), v.FieldByName("Value")
	if !s.IsValid() || !n.IsValid() || !x.IsValid() {
		return false, false, nil, false
	}
	return s.Bool(), n.Bool(), x.Interface(), true
}

// TenantTarget, TenantGroupTarget, APIKeyTarget and UserTarget name the
// targets of those nouns' changes.
func TenantTarget(id, name string) Target { return Target{Type: TargetTenant, ID: id, Name: name} }

// TenantGroupTarget: see TenantTarget.
func TenantGroupTarget(id, name string) Target {
	return Target{Type: TargetTenantGroup, ID: id, Name: name}
}

// APIKeyTarget: see TenantTarget.
func APIKeyTarget(id int64, name string) Target {
	return Target{Type: TargetAPIKey, ID: strconv.FormatInt(id, 10), Name: name}
}

// UserTarget: see TenantTarget. A user mutation records itself in one
// line, e.g. r.Audit.Record(ctx, audit.UserCreate, audit.UserTarget(u.ID,
// u.Username), audit.Fields(input)): Fields masks the password.
func UserTarget(id int64, username string) Target {
	return Target{Type: TargetUser, ID: strconv.FormatInt(id, 10), Name: username}
}
