// Package migrate reads a store's embedded, versioned migrations. Each store
// applies them itself, in its own dialect and under its own lock; what they
// share is the naming rule: NNNN_what.sql, numbered from 1 without gaps.
package migrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Current checks that a database's schema, at the version readVersion
// reads, is latest: the version this build expects.
func Current(ctx context.Context, latest int, readVersion func(context.Context) (int, error)) error {
	v, err := readVersion(ctx)
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if v != latest {
		return fmt.Errorf("the schema is at version %d, this build expects %d", v, latest)
	}
	return nil
}

// Load reads the *.sql files of dir in fsys, in version order.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: the name must be NNNN_what.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: v, Name: strings.TrimSuffix(e.Name(), ".sql"), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d (versions start at 1 and have no gaps)", m.Name, i+1)
		}
	}
	return out, nil
}

// Newer is the error of a database whose schema is newer than this build.
func Newer(dbVersion, known int) error {
	return fmt.Errorf("the database schema is at version %d, newer than this build knows (%d): run a newer build of the service", dbVersion, known)
}
