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

// TenantGroup is a named container of tenants.
type TenantGroup struct {
	bun.BaseModel `bun:"table:tenant_groups,alias:g"`

	ID        string    `bun:"id,pk"`
	Seq       int64     `bun:"seq,notnull"` // creation order, for stable listing
	Name      string    `bun:"name,notnull"`
	Logo      string    `bun:"logo,notnull"`
	OrgID     string    `bun:"org_id,notnull"`
	TenantIDs []string  `bun:"-"` // members, by tenant creation order
	CreatedAt time.Time `bun:"created_at,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

// TenantGroupInput is a tenant group create or patch, shared by REST and
// GraphQL. A given Tenants replaces the membership.
type TenantGroupInput struct {
	Name    Opt[string]
	Tenants Opt[[]string]
	Logo    Opt[string]
}

// validate checks a group input and returns its name and deduplicated
// tenant ids (nil when tenants were not given and not required).
func (in TenantGroupInput) validate(create bool) (name string, ids []string, err error) {
	if name, err = requiredName("name", in.Name); err != nil {
		return "", nil, err
	}
	if in.Logo.Set && !in.Logo.Null && len(in.Logo.Value) > 256<<10 {
		return "", nil, Invalid("logo", "must have at most 256 KiB")
	}
	switch {
	case !in.Tenants.Set && !create:
		return name, nil, nil
	case !in.Tenants.Set:
		return "", nil, Invalid("tenants", "is required: a group needs at least one tenant id")
	case in.Tenants.Null || len(in.Tenants.Value) == 0:
		return "", nil, Invalid("tenants", "must hold at least one tenant id")
	}
	seen := make(map[string]bool, len(in.Tenants.Value))
	for _, id := range in.Tenants.Value {
		if strings.TrimSpace(id) == "" {
			return "", nil, Invalid("tenants", "must not hold an empty tenant id")
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return name, ids, nil
}

func groupIn(ctx context.Context, db bun.IDB, id string) (*TenantGroup, error) {
	g := new(TenantGroup)
	err := db.NewSelect().Model(g).Where("g.id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &notFoundError{"tenant group", id}
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch tenant group %s: %w", id, err)
	}
	if err := loadMembers(ctx, db, []*TenantGroup{g}); err != nil {
		return nil, err
	}
	return g, nil
}

// loadMembers fills TenantIDs of groups in one query.
func loadMembers(ctx context.Context, db bun.IDB, groups []*TenantGroup) error {
	if len(groups) == 0 {
		return nil
	}
	byID := make(map[string]*TenantGroup, len(groups))
	ids := make([]string, 0, len(groups))
	for _, g := range groups {
		g.TenantIDs = []string{}
		byID[g.ID] = g
		ids = append(ids, g.ID)
	}
	var rows []struct {
		ID      string `bun:"id"`
		GroupID string `bun:"group_id"`
	}
	err := db.NewSelect().TableExpr("tenants").Column("id", "group_id").
		Where("group_id IN (?)", bun.In(ids)).OrderExpr("seq ASC").Scan(ctx, &rows)
	if err != nil {
		return fmt.Errorf("store: unable to list tenant group members: %w", err)
	}
	for _, r := range rows {
		g := byID[r.GroupID]
		g.TenantIDs = append(g.TenantIDs, r.ID)
	}
	return nil
}

// TenantGroup returns the group with that id (tgrp_id) and its members.
func (s *Store) TenantGroup(ctx context.Context, id string) (*TenantGroup, error) {
	return groupIn(ctx, s.reader(), id)
}

// TenantGroups lists groups by creation, with their members.
func (s *Store) TenantGroups(ctx context.Context, page Page) ([]*TenantGroup, error) {
	out := []*TenantGroup{}
	if err := page.apply(s.reader().NewSelect().Model(&out).OrderExpr("g.seq ASC")).Scan(ctx); err != nil {
		return nil, fmt.Errorf("store: unable to list tenant groups: %w", err)
	}
	if err := loadMembers(ctx, s.reader(), out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkGroupName refuses a name another group has.
func checkGroupName(ctx context.Context, db bun.IDB, name, self string) error {
	n, err := db.NewSelect().Model((*TenantGroup)(nil)).Where("g.name = ? AND g.id <> ?", name, self).Count(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to check tenant group names: %w", err)
	}
	if n > 0 {
		return conflict("a tenant group named %q exists", name)
	}
	return nil
}

// checkMembers explains why ids cannot all join group: an unknown id is a
// ValidationError, a tenant of another group a conflict naming the tenant
// and that group.
func checkMembers(ctx context.Context, db bun.IDB, groupID string, ids []string) error {
	var rows []struct {
		ID        string         `bun:"id"`
		Name      string         `bun:"name"`
		GroupID   sql.NullString `bun:"group_id"`
		GroupName sql.NullString `bun:"group_name"`
	}
	err := db.NewSelect().TableExpr("tenants AS t").
		ColumnExpr("t.id, t.name, t.group_id, g.name AS group_name").
		Join("LEFT JOIN tenant_groups AS g ON g.id = t.group_id").
		Where("t.id IN (?)", bun.In(ids)).Scan(ctx, &rows)
	if err != nil {
		return fmt.Errorf("store: unable to look up tenants: %w", err)
	}
	found := make(map[string]int, len(rows))
	for i, r := range rows {
		found[r.ID] = i
	}
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			return Invalid("tenants", "no tenant has id %q", id)
		}
	}
	for _, id := range ids {
		r := rows[found[id]]
		if r.GroupID.Valid && r.GroupID.String != groupID {
			// Named as the dashboard shows them: ids mean nothing to whoever reads this.
			return conflict("tenant %q is already in the group %q, and a tenant belongs to one group at most: remove it from %q first",
				r.Name, r.GroupName.String, r.GroupName.String)
		}
	}
	return nil
}

// setMembers makes ids the members of group. With replace, tenants not in
// ids leave the group.
func setMembers(ctx context.Context, tx bun.Tx, groupID string, ids []string, replace bool) error {
	if err := checkMembers(ctx, tx, groupID, ids); err != nil {
		return err
	}
	if replace {
		_, err := tx.NewUpdate().Table("tenants").Set("group_id = NULL").
			Where("group_id = ? AND id NOT IN (?)", groupID, bun.In(ids)).Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: unable to remove tenants from group %s: %w", groupID, err)
		}
	}
	// The condition re-checks each row under its lock: a tenant that another
	// group took since checkMembers is left alone and counted missing.
	res, err := tx.NewUpdate().Table("tenants").Set("group_id = ?", groupID).
		Where("id IN (?) AND (group_id IS NULL OR group_id = ?)", bun.In(ids), groupID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: unable to add tenants to group %s: %w", groupID, err)
	}
	if n, _ := res.RowsAffected(); int(n) != len(ids) {
		if err := checkMembers(ctx, tx, groupID, ids); err != nil {
			return err
		}
		return conflict("the tenants changed while being added to the group; retry")
	}
	return nil
}

// CreateTenantGroup validates in and adds the group with its tenants.
func (s *Store) CreateTenantGroup(ctx context.Context, in TenantGroupInput) (*TenantGroup, error) {
	defer s.tenantsWritten()
	name, ids, err := in.validate(true)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	g := &TenantGroup{ID: newOpaqueID(), Name: name, CreatedAt: now, UpdatedAt: now}
	if in.Logo.Set && !in.Logo.Null {
		g.Logo = in.Logo.Value
	}
	var out *TenantGroup
	err = s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if err := checkGroupName(ctx, tx, name, g.ID); err != nil {
			return err
		}
		if g.OrgID, err = orgID(ctx, tx); err != nil {
			return err
		}
		if g.Seq, err = s.nextSeq(ctx, tx, "tenant_groups"); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(g).Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return conflict("a tenant group named %q exists", name)
			}
			return fmt.Errorf("store: unable to create tenant group %q: %w", name, err)
		}
		if err := setMembers(ctx, tx, g.ID, ids, false); err != nil {
			return err
		}
		out, err = groupIn(ctx, tx, g.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lockGroup reads a group for change, locking its row on PostgreSQL.
func (s *Store) lockGroup(ctx context.Context, tx bun.Tx, id string) (*TenantGroup, error) {
	g := new(TenantGroup)
	err := s.forUpdate(tx.NewSelect().Model(g).Where("g.id = ?", id)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &notFoundError{"tenant group", id}
	}
	if err != nil {
		return nil, fmt.Errorf("store: unable to fetch tenant group %s: %w", id, err)
	}
	return g, nil
}

// PatchTenantGroup renames the group and changes the fields in gives; a
// given Tenants replaces the membership.
func (s *Store) PatchTenantGroup(ctx context.Context, id string, in TenantGroupInput) (*TenantGroup, error) {
	defer s.tenantsWritten()
	var out *TenantGroup
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		g, err := s.lockGroup(ctx, tx, id)
		if err != nil {
			return err
		}
		name, ids, err := in.validate(false)
		if err != nil {
			return err
		}
		if err := checkGroupName(ctx, tx, name, id); err != nil {
			return err
		}
		g.Name = name
		if in.Logo.Set {
			g.Logo = ""
			if !in.Logo.Null {
				g.Logo = in.Logo.Value
			}
		}
		if ids != nil {
			if err := setMembers(ctx, tx, id, ids, true); err != nil {
				return err
			}
		}
		g.UpdatedAt = time.Now().UTC()
		if _, err := tx.NewUpdate().Model(g).Column("name", "logo", "updated_at").WherePK().Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return conflict("a tenant group named %q exists", name)
			}
			return fmt.Errorf("store: unable to update tenant group %s: %w", id, err)
		}
		out, err = groupIn(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteTenantGroup deletes the group only: its tenants remain, ungrouped.
func (s *Store) DeleteTenantGroup(ctx context.Context, id string) error {
	defer s.tenantsWritten()
	return s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := s.lockGroup(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Table("tenants").Set("group_id = NULL").Where("group_id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to ungroup the tenants of group %s: %w", id, err)
		}
		if _, err := tx.NewDelete().Model((*TenantGroup)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("store: unable to delete tenant group %s: %w", id, err)
		}
		return nil
	})
}
