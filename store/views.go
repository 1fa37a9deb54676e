package store

import (
	"time"

	"github.com/uptrace/bun"
)

// SavedView is a user's saved table layout: columns, filter, search, order.
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
