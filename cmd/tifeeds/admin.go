package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/store"
)

func migrateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := dbFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := store.Open(ctx, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "database is up to date")
	}
	for _, name := range applied {
		fmt.Fprintln(stdout, "applied", name)
	}
	return nil
}

func usersCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return fmt.Errorf("usage: tifeeds users create --username NAME [--password P] [--scope root|tenant] [--tenant ID]")
	}
	fs := flag.NewFlagSet("users create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := dbFlag(fs)
	username := fs.String("username", "", "the new user's name (required)")
	password := fs.String("password", "", "password for the dashboard; generated and printed when empty")
	scope := fs.String("scope", string(store.ScopeRoot), "root or tenant")
	tenant := fs.String("tenant", "", "tenant id, for --scope tenant")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *username == "" {
		return fmt.Errorf("--username is required")
	}
	st, err := openStore(ctx, *dsn, discardLogger())
	if err != nil {
		return err
	}
	defer st.Close()
	generated := *password == ""
	if generated {
		*password = store.NewSecret(18)
	}
	var tenantID *string
	if *tenant != "" {
		tenantID = tenant
	}
	u, err := st.CreateUser(ctx, *username, *password, store.Scope(*scope), tenantID)
	if err != nil {
		return err
	}
	rec := audit.New(st, slog.New(slog.NewTextHandler(stderr, nil)))
	cli := audit.WithCLI(ctx)
	rec.Record(cli, audit.UserCreate, audit.UserTarget(u.ID, u.Username),
		audit.Fields(struct {
			Username, Scope, Password string
			TenantID                  *string
		}{u.Username, string(u.Scope), *password, tenantID}))
	k, key, err := st.CreateAPIKey(ctx, u.ID, "default", "")
	if err != nil {
		return err
	}
	rec.Record(cli, audit.APIKeyCreate, audit.APIKeyTarget(k.ID, k.Name), map[string]any{"userId": u.ID})
	fmt.Fprintf(stdout, "created user %s (scope %s)\n", u.Username, u.Scope)
	if generated {
		fmt.Fprintf(stdout, "password: %s\n", *password)
	}
	fmt.Fprintf(stdout, "API key:  %s\n", key)
	return nil
}

func apikeysCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return fmt.Errorf("usage: tifeeds apikeys create --username NAME [--name LABEL]")
	}
	fs := flag.NewFlagSet("apikeys create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := dbFlag(fs)
	username := fs.String("username", "", "the key's owner (required)")
	name := fs.String("name", "cli", "a label to recognise the key by")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *username == "" {
		return fmt.Errorf("--username is required")
	}
	st, err := openStore(ctx, *dsn, discardLogger())
	if err != nil {
		return err
	}
	defer st.Close()
	u, err := st.UserByName(ctx, *username)
	if err != nil {
		return fmt.Errorf("user %q: %w", *username, err)
	}
	k, key, err := st.CreateAPIKey(ctx, u.ID, *name, "")
	if err != nil {
		return err
	}
	audit.New(st, slog.New(slog.NewTextHandler(stderr, nil))).Record(audit.WithCLI(ctx), audit.APIKeyCreate, audit.APIKeyTarget(k.ID, k.Name),
		map[string]any{"userId": u.ID})
	fmt.Fprintln(stdout, key)
	return nil
}
