package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

const workingMemoryCols = `scope, key, version, resource_id, content, updated_at`

// WorkingMemory implements memory.Knowledge. The read is one row of an
// index, and like a turn's reads (turn.Begin) it runs to its end instead
// of being cancellable, which would cost two goroutines; the context is
// checked after it.
func (s *Store) WorkingMemory(ctx context.Context, scope, key string) (memory.WorkingMemory, error) {
	wm, err := currentWorkingMemory(s.stWorkingMemory.QueryRowContext(context.WithoutCancel(ctx), scope, key), scope, key)
	if err != nil {
		return memory.WorkingMemory{}, err
	}
	if err := ctx.Err(); err != nil {
		return memory.WorkingMemory{}, fmt.Errorf("reading working memory: %w", err)
	}
	return wm, nil
}

// currentWorkingMemorySQL reads the current version of a scope and key.
const currentWorkingMemorySQL = `SELECT ` + workingMemoryCols + ` FROM working_memory
	WHERE scope = ? AND key = ? ORDER BY version DESC LIMIT 1`

// currentWorkingMemory reads currentWorkingMemorySQL's row r of scope and
// key: Version 0 when there is none.
func currentWorkingMemory(r *sql.Row, scope, key string) (memory.WorkingMemory, error) {
	wm, err := scanWorkingMemory(r)
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
	if err := s.writeTx(ctx, s.updateWorkingMemory(wm, update, &out)); err != nil {
		return memory.WorkingMemory{}, err
	}
	return out, nil
}

// updateWorkingMemory is UpdateWorkingMemory's write: it sets *out to the
// version current after it.
func (s *Store) updateWorkingMemory(wm memory.WorkingMemory, update memory.WorkingMemoryUpdate, out *memory.WorkingMemory) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		cur, err := currentWorkingMemory(tx.StmtContext(ctx, s.stWorkingMemory).QueryRowContext(ctx, wm.Scope, wm.Key), wm.Scope, wm.Key)
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

// Import implements memory.Knowledge, in one write of the group commits:
// the reads and the checks of every thread first, then the writes.
func (s *Store) Import(ctx context.Context, threads []memory.ImportThread, check memory.ImportCheck) (int, error) {
	threads = memory.MergeImport(threads)
	stored := 0
	var as []appended
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		stored, as = 0, nil
		plans := make([]importPlan, len(threads))
		for i, it := range threads {
			p, err := s.planImport(ctx, tx, it)
			if err != nil {
				return err
			}
			if err := check(p.thread, p.fresh); err != nil {
				return err
			}
			plans[i] = p
		}
		for _, p := range plans {
			if !p.exists {
				if _, err := tx.StmtContext(ctx, s.stInsertThread).ExecContext(ctx, p.thread.ID, p.thread.ResourceID, p.thread.Title,
					string(p.thread.Metadata), p.thread.CreatedAt.UnixMicro(), p.thread.UpdatedAt.UnixMicro()); err != nil {
					return fmt.Errorf("creating thread %q: %w", p.thread.ID, err)
				}
			}
			if len(p.fresh) == 0 {
				continue
			}
			a, err := s.appendTx(ctx, tx, p.thread.ID, p.fresh)
			if err != nil {
				return err
			}
			as = append(as, a)
			stored += len(p.fresh)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.indexed(as...)
	return stored, nil
}

// importPlan is what an import does to one thread: the thread as stored,
// or as it is created when it does not exist, and the messages it adds.
type importPlan struct {
	thread memory.Thread
	exists bool
	fresh  []memory.Message
}

// planImport reads the thread of it and which of its messages it holds.
func (s *Store) planImport(ctx context.Context, tx *sql.Tx, it memory.ImportThread) (importPlan, error) {
	p := importPlan{thread: memory.ImportedThread(it.Thread)}
	cur, err := scanThread(tx.StmtContext(ctx, s.stThread).QueryRowContext(ctx, it.Thread.ID))
	switch {
	case err == nil:
		p.thread, p.exists = cur, true
	case !errors.Is(err, memory.ErrNotFound):
		return p, err
	}
	known := map[string]bool{}
	if p.exists {
		ids := make([]string, len(it.Messages))
		for i, m := range it.Messages {
			ids[i] = m.ID
		}
		if known, err = knownIDs(ctx, tx.StmtContext(ctx, s.stKnown), it.Thread.ID, ids); err != nil {
			return p, err
		}
	}
	p.fresh = memory.FreshImported(it.Messages, known)
	return p, nil
}

// SetTitleIfEmpty implements memory.Knowledge.
func (s *Store) SetTitleIfEmpty(ctx context.Context, id, title string, now time.Time) (bool, error) {
	set := false
	var v uint64
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE threads SET title = ? WHERE id = ? AND title = ''`, title, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		set = n == 1
		v = s.version.Add(1)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("setting the title of thread %q: %w", id, err)
	}
	if set {
		s.recall.Retitled(id, title, v)
	}
	return set, nil
}

// EraseResource implements memory.Knowledge, in one write of the group
// commits.
func (s *Store) EraseResource(ctx context.Context, resourceID string) (memory.Erased, error) {
	var e memory.Erased
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		e = memory.Erased{}
		const threadsOf = `SELECT id FROM threads WHERE resource_id = ?1`
		rows, err := tx.QueryContext(ctx, `DELETE FROM working_memory
			WHERE resource_id = ?1 OR (scope = '`+memory.ScopeThread+`' AND key IN (`+threadsOf+`))
			RETURNING scope, key`, resourceID)
		if err != nil {
			return err
		}
		erased := map[[2]string]bool{}
		for rows.Next() {
			var k [2]string
			if err := rows.Scan(&k[0], &k[1]); err != nil {
				rows.Close()
				return err
			}
			erased[k] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		e.WorkingMemories = int64(len(erased))
		for _, d := range []struct {
			q string
			n *int64
		}{
			{`DELETE FROM messages_fts WHERE rowid IN (SELECT rowid FROM messages WHERE thread_id IN (` + threadsOf + `))`, nil},
			{`DELETE FROM message_vectors WHERE resource_id = ?1 OR thread_id IN (` + threadsOf + `)`, nil},
			{`DELETE FROM messages WHERE thread_id IN (` + threadsOf + `)`, &e.Messages},
			{`DELETE FROM threads WHERE resource_id = ?1`, &e.Threads},
			{`DELETE FROM usage WHERE resource_id = ?1`, &e.UsageRows},
			{`DELETE FROM thread_usage WHERE resource_id = ?1`, &e.UsageRows},
		} {
			res, err := tx.ExecContext(ctx, d.q, resourceID)
			if err != nil {
				return err
			}
			if d.n != nil {
				n, err := res.RowsAffected()
				if err != nil {
					return err
				}
				*d.n += n
			}
		}
		return nil
	})
	if err != nil {
		return memory.Erased{}, fmt.Errorf("erasing resource %q: %w", resourceID, err)
	}
	s.recall.Dropped(resourceID)
	return e, nil
}
