package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// errNotYet is what the parts of memory.Knowledge not built yet return.
var errNotYet = fmt.Errorf("sqlite: %w", errors.ErrUnsupported)

const workingMemoryCols = `scope, key, version, resource_id, content, updated_at`

// WorkingMemory implements memory.Knowledge.
func (s *Store) WorkingMemory(ctx context.Context, scope, key string) (memory.WorkingMemory, error) {
	return currentWorkingMemory(ctx, s.db, scope, key)
}

// rowQuerier is a *sql.DB or a *sql.Tx.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// currentWorkingMemory reads the current version of scope and key, Version
// 0 when there is none.
func currentWorkingMemory(ctx context.Context, q rowQuerier, scope, key string) (memory.WorkingMemory, error) {
	wm, err := scanWorkingMemory(q.QueryRowContext(ctx, `SELECT `+workingMemoryCols+` FROM working_memory
		WHERE scope = ? AND key = ? ORDER BY version DESC LIMIT 1`, scope, key))
	if errors.Is(err, sql.ErrNoRows) {
		return memory.WorkingMemory{Scope: scope, Key: key}, nil
	}
	if err != nil {
		return memory.WorkingMemory{}, fmt.Errorf("reading working memory: %w", err)
	}
	return wm, nil
}

// UpdateWorkingMemory implements memory.Knowledge: the read, update and
// write are one write of the group commits (writer.go), which run one at a
// time, so no other update comes between them; an update that fails rolls
// back its own savepoint, not the group.
func (s *Store) UpdateWorkingMemory(ctx context.Context, wm memory.WorkingMemory, update memory.WorkingMemoryUpdate) (memory.WorkingMemory, error) {
	var out memory.WorkingMemory
	if err := s.writeTx(ctx, updateWorkingMemory(wm, update, &out)); err != nil {
		return memory.WorkingMemory{}, err
	}
	return out, nil
}

// updateWorkingMemory is UpdateWorkingMemory's write: it sets *out to the
// version current after it.
func updateWorkingMemory(wm memory.WorkingMemory, update memory.WorkingMemoryUpdate, out *memory.WorkingMemory) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		cur, err := currentWorkingMemory(ctx, tx, wm.Scope, wm.Key)
		if err != nil {
			return err
		}
		content, err := update(cur)
		if err != nil {
			return err
		}
		if content == cur.Content {
			*out = cur
			return nil
		}
		next := memory.WorkingMemory{Scope: wm.Scope, Key: wm.Key, ResourceID: wm.ResourceID, Version: cur.Version + 1,
			Content: content, UpdatedAt: memory.AsStored(wm.UpdatedAt)}
		if _, err := tx.ExecContext(ctx, `INSERT INTO working_memory (`+workingMemoryCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
			next.Scope, next.Key, next.Version, next.ResourceID, next.Content, next.UpdatedAt.UnixMicro()); err != nil {
			return fmt.Errorf("storing working memory: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM working_memory WHERE scope = ? AND key = ? AND version <= ?`,
			next.Scope, next.Key, next.Version-memory.MaxWorkingMemoryVersions); err != nil {
			return fmt.Errorf("dropping old working memory: %w", err)
		}
		*out = next
		return nil
	}
}

// WorkingMemoryVersions implements memory.Knowledge.
func (s *Store) WorkingMemoryVersions(ctx context.Context, scope, key string, limit int) ([]memory.WorkingMemory, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+workingMemoryCols+` FROM working_memory
		WHERE scope = ? AND key = ? ORDER BY version DESC LIMIT ?`, scope, key, limit)
	if err != nil {
		return nil, fmt.Errorf("reading working memory: %w", err)
	}
	defer rows.Close()
	var out []memory.WorkingMemory
	for rows.Next() {
		wm, err := scanWorkingMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("reading working memory: %w", err)
		}
		out = append(out, wm)
	}
	return out, rows.Err()
}

func scanWorkingMemory(r scanner) (memory.WorkingMemory, error) {
	var wm memory.WorkingMemory
	var at int64
	if err := r.Scan(&wm.Scope, &wm.Key, &wm.Version, &wm.ResourceID, &wm.Content, &at); err != nil {
		return wm, err
	}
	wm.UpdatedAt = time.UnixMicro(at).UTC()
	return wm, nil
}

// Import implements memory.Knowledge.
func (s *Store) Import(ctx context.Context, threads []memory.ImportThread, check memory.ImportCheck) (int, error) {
	return 0, errNotYet
}

// SetTitleIfEmpty implements memory.Knowledge.
func (s *Store) SetTitleIfEmpty(ctx context.Context, id, title string, now time.Time) (bool, error) {
	return false, errNotYet
}

// EraseResource implements memory.Knowledge.
func (s *Store) EraseResource(ctx context.Context, resourceID string) (memory.Erased, error) {
	return memory.Erased{}, errNotYet
}
