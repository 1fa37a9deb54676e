package model

// SavedView is a store.SavedView with its JSON definition decoded for the
// API.
type SavedView struct {
	ID        int64          `json:"id"`
	Table     ViewTable      `json:"table"`
	Name      string         `json:"name"`
	Columns   []string       `json:"columns"`
	Filter    map[string]any `json:"filter,omitempty"`
	Search    string         `json:"search"`
	OrderBy   *ViewOrder     `json:"orderBy,omitempty"`
	IsDefault bool           `json:"isDefault"`
}
