package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store/migrations"
)

// searchOp is the case-insensitive LIKE of the dialect (SQLite's LIKE
// folds ASCII).
func (s *Store) searchOp() string {
	if s.Dialect == Postgres {
		return "ILIKE"
	}
	return "LIKE"
}

// searchMatches returns the ids of every IoC whose value, or rule text,
// contains search, when there are at most limit of them; sparse is false
// when there are more. Found once, they make the count and the page
// lookups by id; a dense search stops early in the page's order instead.
//
// Values are found through a trigram index (the key indexer's
// ioc_value_keys: pg_trgm on PostgreSQL, FTS5 on SQLite) for the IoCs up
// to its value_id; those after are scanned, a range of iocs' primary key
// (on PostgreSQL only those after the tail it keeps of their values,
// valueTail).
// A value never changes, so a key holds while its IoC is there: the join
// drops the keys of IoCs gone.
func (s *Store) searchMatches(ctx context.Context, search string, limit int) (ids []int64, sparse bool, err error) {
	valueID, err := s.valueKeysID(ctx)
	if err != nil {
		return nil, false, err
	}
	op, pattern := s.searchOp(), "%"+likeEscape(search)+"%"
	// Whether to have the tail read the IoCs this search scanned, after
	// it: a read beside the scan slowed it (a first search with 1,000,000
	// IoCs after the value keys took 304 ms against 167).
	followTail := false
	// The values: through the keys up to valueID, and those after.
	var values string
	var args []any
	switch {
	case utf8.RuneCountInString(search) < 3:
		// Shorter than a trigram, both trigram indexes test every key;
		// the scan of iocs stops at the limit's match.
		values, args = `SELECT id FROM iocs WHERE value `+op+` ? ESCAPE '\'`, []any{pattern}
	case s.Dialect == Postgres:
		// The keys hold the values' trigram form, where punctuation is
		// letters: the form of search finds every IoC whose value
		// contains it (the form is one character for one and leaves
		// letters' case alone), and some whose value does not ("a-b" for
		// "a_b"), which the IoC's own value tells apart. The form has no
		// wildcard left to escape.
		form := valueKeyForm(search)
		keys, keyArgs := `x.value ILIKE ?`, []any{"%" + form + "%"}
		if tris := s.searchTrigrams().indexTrigrams(form); tris != nil {
			// The index reads the chosen trigrams, each a pattern of its
			// own; the form, in an expression no index serves, tests the
			// key rows they find.
			keys, keyArgs = strings.Repeat(`x.value ILIKE ? AND `, len(tris))+`(x.value || '') ILIKE ?`, nil
			for _, tri := range tris {
				keyArgs = append(keyArgs, "%"+tri+"%")
			}
			keyArgs = append(keyArgs, "%"+form+"%")
		}
		values = `SELECT x.id FROM ioc_value_keys x JOIN iocs ON iocs.id = x.id WHERE ` + keys + ` AND iocs.value ILIKE ? ESCAPE '\'`
		args = append(keyArgs, pattern)
		// The IoCs after the value keys: those the tail holds that match,
		// looked up by id, and those after the tail.
		hi, matches, dense := s.tail.tailSearch(valueID, string(appendLowerASCII(nil, search)), limit)
		if dense {
			return nil, false, nil
		}
		if len(matches) > 0 {
			values += `
UNION SELECT id FROM iocs WHERE id IN (?) AND value ILIKE ? ESCAPE '\'`
			args = append(args, bun.In(matches), pattern)
		}
		followTail = true
		values += `
UNION SELECT id FROM iocs WHERE id > ? AND value ILIKE ? ESCAPE '\'`
		args = append(args, hi, pattern)
	case strings.ContainsAny(search, "%_"):
		// FTS5 reads its trigrams for a plain LIKE of three characters or
		// more: with ESCAPE it tests every row of its table (0.3-0.5 s at
		// 1,000,000), slower than LIKE over iocs (0.1 s).
		values, args = `SELECT id FROM iocs WHERE value LIKE ? ESCAPE '\'`, []any{pattern}
	default:
		// Without a wildcard in search nothing needs escaping (a
		// backslash is plain without ESCAPE). CROSS JOIN: the index leads.
		values = `SELECT x.rowid FROM ioc_value_keys x CROSS JOIN iocs ON iocs.id = x.rowid WHERE x.value LIKE ?
UNION SELECT id FROM iocs WHERE id > ? AND value LIKE ? ESCAPE '\'`
		args = []any{"%" + search + "%", valueID, pattern}
	}
	// A rule is also found by its text (ioc_texts holds only rules').
	err = s.reader().NewRaw(values+`
UNION SELECT t.ioc_id FROM ioc_texts t JOIN iocs r ON r.id = t.ioc_id WHERE r.type = ? AND t.text `+op+` ? ESCAPE '\'
LIMIT ?`, append(args, string(ioc.Rule), pattern, limit+1)...).Scan(ctx, &ids)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("store: unable to search indicators: %w", err)
	}
	if followTail {
		s.tail.filling.start(tailWork, s.followValueTail)
	}
	if len(ids) > limit {
		return nil, false, nil
	}
	slices.Sort(ids)
	return ids, true, nil
}

// valueKeyForm is s in the trigram form of PostgreSQL's value keys
// (migrations.ValueKeyPunctuation).
func valueKeyForm(s string) string {
	return valueKeyFormer.Replace(s)
}

var valueKeyFormer = func() *strings.Replacer {
	var pairs []string
	for i := range len(migrations.ValueKeyPunctuation) {
		pairs = append(pairs, migrations.ValueKeyPunctuation[i:i+1], migrations.ValueKeyLetters[i:i+1])
	}
	return strings.NewReplacer(pairs...)
}()

// valueKeysID reads the id up to which every IoC has its value key.
func (s *Store) valueKeysID(ctx context.Context) (int64, error) {
	return s.readNumber(ctx, "SELECT value_id FROM ioc_keys_state WHERE id = 1", "the value keys' state")
}
