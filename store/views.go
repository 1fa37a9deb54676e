package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// SavedView is a user's saved table layout ("Select View"): columns, filter,
// search and order, as a JSON document whose shape belongs to the table.
type SavedView struct {
	bun.BaseModel `bun:"table:saved_views"`

	ID         int64     `bun:"id,pk,autoincrement"`
	UserID     int64     `bun:"user_id,notnull"`
	Table      string    `bun:"table_name,notnull"`
	Name       string    `bun:"name,notnull"`
	Definition string    `bun:"definition,notnull"` // JSON document
	IsDefault  bool      `bun:"is_default,notnull"`
	CreatedAt  time.Time `bun:"created_at,notnull"`
	UpdatedAt  time.Time `bun:"updated_at,notnull"`
}

// maxViewNameLength keeps names displayable in a drop-down.
const maxViewNameLength = 100

// MaxViewsPerTable is how many views one user may save for one table.
const MaxViewsPerTable = 50

// maxViewDefinition bounds a view's JSON document (columns, filter, search).
const maxViewDefinition = 64 << 10

// SaveView creates the user's view, or replaces the one of the same name on
// the same table. Making it the default clears the table's previous default
// in the same transaction, so there is never more than one.
func (s *Store) SaveView(ctx context.Context, v *SavedView) error {
	v.Name = strings.TrimSpace(v.Name)
	switch {
	case v.Name == "":
		return Invalid("name", "must not be empty")
	case len(v.Name) > maxViewNameLength:
		return Invalid("name", "must have at most %d characters", maxViewNameLength)
	case v.Table == "":
		return Invalid("table", "must not be empty")
	case len(v.Definition) > maxViewDefinition:
		return Invalid("filter", "the view (columns, filter, search) must take at most %d bytes, not %d", maxViewDefinition, len(v.Definition))
	}
	now := time.Now().UTC()
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := s.lockUser(ctx, tx, v.UserID); err != nil {
			return err
		}
		others, err := tx.NewSelect().Model((*SavedView)(nil)).
			Where("user_id = ? AND table_name = ? AND name <> ?", v.UserID, v.Table, v.Name).Count(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to count views: %w", err)
		}
		if others >= MaxViewsPerTable {
			return Invalid("name", "at most %d views may be saved per table; delete one first", MaxViewsPerTable)
		}
		if v.IsDefault {
			_, err := tx.NewUpdate().Model((*SavedView)(nil)).Set("is_default = ?", false).
				Where("user_id = ? AND table_name = ? AND name <> ?", v.UserID, v.Table, v.Name).Exec(ctx)
			if err != nil {
				return fmt.Errorf("store: unable to clear the default view: %w", err)
			}
		}
		v.CreatedAt, v.UpdatedAt = now, now
		_, err = tx.NewInsert().Model(v).
			On("CONFLICT (user_id, table_name, name) DO UPDATE").
			Set("definition = EXCLUDED.definition").
			Set("is_default = EXCLUDED.is_default").
			Set("updated_at = EXCLUDED.updated_at").
			Returning("id, created_at").
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to save view %q: %w", v.Name, err)
		}
		return nil
	})
}

// Views lists the user's views of a table: the default first, then by name.
func (s *Store) Views(ctx context.Context, userID int64, table string) ([]SavedView, error) {
	var views []SavedView
	err := s.reader().NewSelect().Model(&views).
		Where("user_id = ? AND table_name = ?", userID, table).
		Order("is_default DESC", "name ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: unable to list views: %w", err)
	}
	return views, nil
}

// View returns one of the user's views.
func (s *Store) View(ctx context.Context, userID, id int64) (*SavedView, error) {
	v := new(SavedView)
	err := s.reader().NewSelect().Model(v).Where("id = ? AND user_id = ?", id, userID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch view %d: %w", id, err)
	}
	return v, nil
}

// DeleteView removes one of the user's views.
func (s *Store) DeleteView(ctx context.Context, userID, id int64) error {
	res, err := s.DB.NewDelete().Model((*SavedView)(nil)).Where("id = ? AND user_id = ?", id, userID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to delete view %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
