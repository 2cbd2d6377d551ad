package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/companionhq/companion/internal/memory"
)

// errNotYet is what the parts of memory.Knowledge not built yet return.
var errNotYet = fmt.Errorf("postgres: %w", errors.ErrUnsupported)

const (
	workingMemoryCols = `scope, key, version, resource_id, content, updated_at`
	// currentWorkingMemorySQL reads the current version of scope $1, key $2.
	currentWorkingMemorySQL = `SELECT ` + workingMemoryCols + ` FROM working_memory
		WHERE scope = $1 AND key = $2 ORDER BY version DESC LIMIT 1`
	// workingMemoryLockSQL serializes the updates of scope $1, key $2 until
	// the transaction ends, whether a version exists yet or not.
	workingMemoryLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/working_memory/' || $1 || '/' || $2, 0))`
)

// WorkingMemory implements memory.Knowledge.
func (s *Store) WorkingMemory(ctx context.Context, scope, key string) (memory.WorkingMemory, error) {
	return scanCurrentWorkingMemory(s.pool.QueryRow(ctx, currentWorkingMemorySQL, scope, key), scope, key)
}

// scanCurrentWorkingMemory reads currentWorkingMemorySQL's row: Version 0
// when there is none.
func scanCurrentWorkingMemory(r pgx.Row, scope, key string) (memory.WorkingMemory, error) {
	wm, err := scanWorkingMemory(r)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.WorkingMemory{Scope: scope, Key: key}, nil
	}
	if err != nil {
		return memory.WorkingMemory{}, fmt.Errorf("reading working memory: %w", err)
	}
	return wm, nil
}

// UpdateWorkingMemory implements memory.Knowledge: a transaction that
// first takes an advisory lock on the scope and key (on every instance,
// and before any version exists), then reads, updates and writes. Two
// round trips: BEGIN, the lock and the read; the write and COMMIT.
func (s *Store) UpdateWorkingMemory(ctx context.Context, wm memory.WorkingMemory, update memory.WorkingMemoryUpdate) (memory.WorkingMemory, error) {
	var out memory.WorkingMemory
	err := retryLost(ctx, func() error {
		return s.within(ctx, func(conn *pgxpool.Conn) error {
			var b pgx.Batch
			b.Queue(`BEGIN`)
			b.Queue(workingMemoryLockSQL, wm.Scope, wm.Key)
			b.Queue(currentWorkingMemorySQL, wm.Scope, wm.Key)
			var cur memory.WorkingMemory
			if err := readBatch(conn.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
				for range 2 {
					if _, err := br.Exec(); err != nil {
						return err
					}
				}
				var err error
				cur, err = scanCurrentWorkingMemory(br.QueryRow(), wm.Scope, wm.Key)
				return err
			}); err != nil {
				return err
			}
			content, err := update(cur)
			if err != nil {
				return err
			}
			if content == cur.Content {
				out = cur
				return committed(conn.Exec(ctx, `COMMIT`))
			}
			next := memory.WorkingMemory{Scope: wm.Scope, Key: wm.Key, ResourceID: wm.ResourceID, Version: cur.Version + 1,
				Content: content, UpdatedAt: memory.AsStored(wm.UpdatedAt)}
			b = pgx.Batch{}
			b.Queue(`INSERT INTO working_memory (`+workingMemoryCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
				next.Scope, next.Key, next.Version, next.ResourceID, next.Content, next.UpdatedAt)
			b.Queue(`DELETE FROM working_memory WHERE scope = $1 AND key = $2 AND version <= $3`,
				next.Scope, next.Key, next.Version-memory.MaxWorkingMemoryVersions)
			b.Queue(`COMMIT`)
			if err := readBatch(conn.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
				if _, err := br.Exec(); err != nil {
					return fmt.Errorf("storing working memory: %w", err)
				}
				if _, err := br.Exec(); err != nil {
					return fmt.Errorf("dropping old working memory: %w", err)
				}
				return committed(br.Exec())
			}); err != nil {
				return err
			}
			out = next
			return nil
		})
	})
	if err != nil {
		return memory.WorkingMemory{}, err
	}
	return out, nil
}

// WorkingMemoryVersions implements memory.Knowledge.
func (s *Store) WorkingMemoryVersions(ctx context.Context, scope, key string, limit int) ([]memory.WorkingMemory, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+workingMemoryCols+` FROM working_memory
		WHERE scope = $1 AND key = $2 ORDER BY version DESC LIMIT $3`, scope, key, limit)
	if err != nil {
		return nil, fmt.Errorf("reading working memory: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.WorkingMemory, error) { return scanWorkingMemory(r) })
	if err != nil {
		return nil, fmt.Errorf("reading working memory: %w", err)
	}
	return out, nil
}

func scanWorkingMemory(r pgx.Row) (memory.WorkingMemory, error) {
	var wm memory.WorkingMemory
	if err := r.Scan(&wm.Scope, &wm.Key, &wm.Version, &wm.ResourceID, &wm.Content, &wm.UpdatedAt); err != nil {
		return wm, err
	}
	wm.UpdatedAt = wm.UpdatedAt.UTC()
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
