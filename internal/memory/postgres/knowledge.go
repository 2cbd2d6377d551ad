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

// Import implements memory.Knowledge: one transaction, whose first
// round trip reads every thread and which of its messages it holds; then
// the checks; then the writes of each thread (a batch, or for many
// messages a COPY and a batch), the last with COMMIT.
func (s *Store) Import(ctx context.Context, threads []memory.ImportThread, check memory.ImportCheck) (int, error) {
	threads = memory.MergeImport(threads)
	stored := 0
	err := retryLost(ctx, func() error {
		stored = 0
		return s.within(ctx, func(conn *pgxpool.Conn) error {
			var b pgx.Batch
			b.Queue(`BEGIN`)
			for _, it := range threads {
				ids := make([]string, len(it.Messages))
				for i, m := range it.Messages {
					ids[i] = m.ID
				}
				b.Queue(threadSQL, it.Thread.ID)
				b.Queue(knownSQL, it.Thread.ID, ids)
			}
			plans := make([]importPlan, len(threads))
			if err := readBatch(conn.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
				if _, err := br.Exec(); err != nil {
					return err
				}
				for i, it := range threads {
					p := importPlan{thread: memory.ImportedThread(it.Thread)}
					cur, err := scanThread(br.QueryRow())
					switch {
					case err == nil:
						p.thread, p.exists = cur, true
					case !errors.Is(err, memory.ErrNotFound):
						return err
					}
					known, err := collectKnown(br.Query())
					if err != nil {
						return err
					}
					p.fresh = memory.FreshImported(it.Messages, known)
					plans[i] = p
				}
				return nil
			}); err != nil {
				return err
			}
			for _, p := range plans {
				if err := check(p.thread, p.fresh); err != nil {
					return err
				}
			}
			for _, p := range plans {
				if err := importThread(ctx, conn, p); err != nil {
					return err
				}
				stored += len(p.fresh)
			}
			return committed(conn.Exec(ctx, `COMMIT`))
		})
	})
	if err != nil {
		return 0, err
	}
	return stored, nil
}

// importPlan is what an import does to one thread: the thread as stored,
// or as it is created when it does not exist, and the messages it adds.
type importPlan struct {
	thread memory.Thread
	exists bool
	fresh  []memory.Message
}

// importThread creates p's thread when it does not exist and appends its
// messages, in the transaction open on conn.
func importThread(ctx context.Context, conn *pgxpool.Conn, p importPlan) error {
	var b pgx.Batch
	if !p.exists {
		b.Queue(`INSERT INTO threads (id, resource_id, title, metadata, created_at, updated_at)
			VALUES ($1, $2, $3, $4::jsonb, $5, $6) ON CONFLICT (id) DO NOTHING`,
			p.thread.ID, p.thread.ResourceID, p.thread.Title, string(p.thread.Metadata), p.thread.CreatedAt, p.thread.UpdatedAt)
	}
	var read func(pgx.BatchResults) ([]memory.Message, error)
	copied := len(p.fresh) >= copyThreshold
	if len(p.fresh) > 0 && !copied {
		read = queueAppend(&b, p.thread.ID, p.fresh)
	}
	if b.Len() > 0 {
		if err := readBatch(conn.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
			if !p.exists {
				if _, err := br.Exec(); err != nil {
					return fmt.Errorf("creating thread %q: %w", p.thread.ID, err)
				}
			}
			if read != nil {
				_, err := read(br)
				return err
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if copied {
		if _, err := copyMessages(ctx, conn, p.thread.ID, p.fresh); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, indexSQL, p.thread.ID, len(p.fresh)); err != nil {
			return fmt.Errorf("indexing messages: %w", err)
		}
	}
	return nil
}

// SetTitleIfEmpty implements memory.Knowledge.
func (s *Store) SetTitleIfEmpty(ctx context.Context, id, title string, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE threads SET title = $1 WHERE id = $2 AND title = ''`, title, id)
	if err != nil {
		return false, fmt.Errorf("setting the title of thread %q: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// EraseResource implements memory.Knowledge: one implicit transaction, one
// round trip. The index rows go first, by the resource's index, so that
// the messages' cascade finds none left to delete.
func (s *Store) EraseResource(ctx context.Context, resourceID string) (memory.Erased, error) {
	var e memory.Erased
	err := retryLost(ctx, func() error {
		e = memory.Erased{}
		const threadsOf = `SELECT id FROM threads WHERE resource_id = $1`
		var b pgx.Batch
		b.Queue(`SELECT count(*) FROM (SELECT DISTINCT scope, key FROM working_memory
			WHERE resource_id = $1 OR (scope = '`+memory.ScopeThread+`' AND key IN (`+threadsOf+`))) w`, resourceID)
		b.Queue(`DELETE FROM working_memory WHERE resource_id = $1 OR (scope = '`+memory.ScopeThread+`' AND key IN (`+threadsOf+`))`, resourceID)
		b.Queue(`DELETE FROM message_search WHERE resource_id = $1`, resourceID)
		b.Queue(`DELETE FROM message_vectors WHERE resource_id = $1`, resourceID)
		b.Queue(`DELETE FROM messages WHERE thread_id IN (`+threadsOf+`)`, resourceID)
		b.Queue(`DELETE FROM threads WHERE resource_id = $1`, resourceID)
		b.Queue(`DELETE FROM usage WHERE resource_id = $1`, resourceID)
		b.Queue(`DELETE FROM thread_usage WHERE resource_id = $1`, resourceID)
		return readBatch(s.pool.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
			if err := br.QueryRow().Scan(&e.WorkingMemories); err != nil {
				return err
			}
			for _, n := range []*int64{nil, nil, nil, &e.Messages, &e.Threads, &e.UsageRows, &e.UsageRows} {
				tag, err := br.Exec()
				if err != nil {
					return err
				}
				if n != nil {
					*n += tag.RowsAffected()
				}
			}
			return nil
		})
	})
	if err != nil {
		return memory.Erased{}, fmt.Errorf("erasing resource %q: %w", resourceID, err)
	}
	return e, nil
}
