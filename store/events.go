package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// SharesEvents reports whether other instances may share this database, so
// that the events of one must reach the others (through NotifyEvent and
// ListenEvents). Only PostgreSQL is shared: one process owns a SQLite file.
func (s *Store) SharesEvents() bool { return s.Dialect == Postgres }

// NotifyEvent sends payload to the listeners of channel on every instance
// sharing the database (PostgreSQL's pg_notify).
func (s *Store) NotifyEvent(ctx context.Context, channel, payload string) error {
	if _, err := s.DB.ExecContext(ctx, "SELECT pg_notify(?, ?)", channel, payload); err != nil {
		return fmt.Errorf("store: unable to notify %s: %w", channel, err)
	}
	return nil
}

// EventListener is a connection of its own that LISTENs on one channel. A
// pooled connection is not used: it would go back to the pool still
// listening.
type EventListener struct {
	conn *pgx.Conn
}

// ListenEvents opens a connection to the store's database, named
// applicationName in pg_stat_activity, and LISTENs on channel, a plain
// identifier (a constant of the caller: it is not quoted, so that the
// listener's query reads "LISTEN <channel>" in pg_stat_activity).
func (s *Store) ListenEvents(ctx context.Context, channel, applicationName string) (*EventListener, error) {
	cfg, err := s.listenerConfig(ctx)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = applicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: unable to connect the event listener: %w", err)
	}
	l := &EventListener{conn: conn}
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		l.Close()
		return nil, fmt.Errorf("store: unable to listen for events: %w", err)
	}
	return l, nil
}

// Next waits for the next notification and returns its payload.
func (l *EventListener) Next(ctx context.Context) (string, error) {
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		return "", fmt.Errorf("store: unable to wait for events: %w", err)
	}
	return n.Payload, nil
}

// Close closes the listener's connection, waiting a second at most.
func (l *EventListener) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.conn.Close(ctx)
}

// listenerConfig borrows a connection of the pool for its settings, so the
// listener reaches the same database with the same credentials.
func (s *Store) listenerConfig(ctx context.Context) (*pgx.ConnConfig, error) {
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: unable to get a connection for the event listener: %w", err)
	}
	defer conn.Close()
	var cfg *pgx.ConnConfig
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("store: the driver connection is a %T, not pgx", dc)
		}
		// Parsed again rather than copied: a copy keeps the pooled
		// connection's callbacks, so its notifications would land there.
		dsn := c.Conn().Config().ConnString()
		if dsn == "" {
			return errors.New("store: the connection has no connection string")
		}
		cfg, err = pgx.ParseConfig(dsn)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: unable to read the connection settings: %w", err)
	}
	return cfg, nil
}
