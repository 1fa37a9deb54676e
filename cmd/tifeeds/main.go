// Command tifeeds is the threat-intelligence feeds service: `tifeeds serve`
// runs it; other subcommands manage its database and users.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

const usage = `tifeeds: self-hosted threat-intelligence feeds service

Usage:
  tifeeds serve    [flags]   run the service (migrates the database first)
  tifeeds migrate  [flags]   apply database migrations and exit
  tifeeds users create   --username NAME [--password P] [--scope root|tenant] [--tenant ID]
  tifeeds apikeys create --username NAME [--name LABEL]
  tifeeds version

Run 'tifeeds <command> -h' for a command's flags. Every flag falls back to
the TIFEEDS_* environment variable named in its help.
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "tifeeds:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("missing command")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "migrate":
		return migrateCmd(ctx, args[1:], stdout, stderr)
	case "users":
		return usersCmd(ctx, args[1:], stdout, stderr)
	case "apikeys":
		return apikeysCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "tifeeds", versionString())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if dirty {
				rev += "-dirty"
			}
			return "dev-" + rev
		}
	}
	return "dev"
}

// envDefault returns the environment variable's value, or def.
func envDefault(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// newLogger returns the process logger in the chosen format.
func newLogger(format string, w io.Writer) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if lvl := os.Getenv("TIFEEDS_LOG_LEVEL"); lvl != "" {
		var l slog.Level
		if err := l.UnmarshalText([]byte(lvl)); err != nil {
			return nil, fmt.Errorf("TIFEEDS_LOG_LEVEL: %w", err)
		}
		opts.Level = l
	}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
