package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/companionhq/companion/internal/memory"
)

// The vector index is message_vectors (migration 0007). A message's
// position (memory.Unembedded.Pos) is its rowid in messages.

// Unembedded implements memory.Vectors.
func (s *Store) Unembedded(ctx context.Context, model string, after int64, limit int) ([]memory.Unembedded, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT m.rowid, m.thread_id, m.seq, m.id, t.resource_id, m.text
		FROM messages m JOIN threads t ON t.id = m.thread_id
		WHERE m.rowid > ?1 AND m.text <> ''
			AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.thread_id = m.thread_id AND v.seq = m.seq AND v.model = ?2)
		ORDER BY m.rowid LIMIT ?3`, after, model, limit)
	if err != nil {
		return nil, fmt.Errorf("reading messages to embed: %w", err)
	}
	defer rows.Close()
	var out []memory.Unembedded
	for rows.Next() {
		var u memory.Unembedded
		if err := rows.Scan(&u.Pos, &u.ThreadID, &u.Seq, &u.ID, &u.ResourceID, &u.Text); err != nil {
			return nil, fmt.Errorf("reading messages to embed: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading messages to embed: %w", err)
	}
	return out, nil
}

// PutVectors implements memory.Vectors, in one write of the group commits.
func (s *Store) PutVectors(ctx context.Context, model string, vs []memory.MessageVector) error {
	if len(vs) == 0 {
		return nil
	}
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO message_vectors (thread_id, seq, resource_id, model, vec)
			SELECT m.thread_id, m.seq, t.resource_id, ?4, ?5 FROM messages m JOIN threads t ON t.id = m.thread_id
			WHERE m.thread_id = ?1 AND m.seq = ?2 AND m.id = ?3
			ON CONFLICT (thread_id, seq) DO UPDATE SET resource_id = excluded.resource_id, model = excluded.model, vec = excluded.vec`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, v := range vs {
			if _, err := st.ExecContext(ctx, v.ThreadID, v.Seq, v.ID, model, memory.EncodeVector(v.Vec)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storing vectors: %w", err)
	}
	return nil
}

// vectorsSQL reads a search's candidates: the newest VectorCandidates
// vectors of resource ?1 and model ?2, of thread ?3 (unless empty), not of
// thread ?4.
const vectorsSQL = `SELECT thread_id, seq, vec FROM message_vectors
	WHERE resource_id = ?1 AND model = ?2 AND (?3 = '' OR thread_id = ?3) AND thread_id <> ?4
	ORDER BY rowid DESC LIMIT ?5`

// vectorHitSQL reads a result: its thread, title and message.
var vectorHitSQL = `SELECT m.thread_id, t.title, ` + prefixed("m.", messageCols) + `
	FROM messages m JOIN threads t ON t.id = m.thread_id WHERE m.thread_id = ? AND m.seq = ?`

// SearchVectors implements memory.Vectors: the candidates' vectors are
// compared in process, then the nearest are read with their threads, from
// the recall index when it holds the resource.
func (s *Store) SearchVectors(ctx context.Context, q memory.SearchQuery, model string, v []float32) ([]memory.SearchResult, error) {
	if q.Limit <= 0 || len(v) == 0 {
		return nil, nil
	}
	rows, err := s.stVectors.QueryContext(ctx, q.ResourceID, model, q.ThreadID, q.ExcludeThreadID, memory.VectorCandidates)
	if err != nil {
		return nil, fmt.Errorf("searching vectors: %w", err)
	}
	best, err := memory.NearestRows(v, q.Limit, rows)
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("searching vectors: %w", err)
	}
	out := make([]memory.SearchResult, 0, len(best))
	// The recall index, when it holds the resource, holds what a search
	// shows of its messages: a message it does not hold was deleted.
	x := s.recall.Cached(q.ResourceID)
	for _, b := range best {
		if x != nil {
			if h, ok := x.Message(b.Key.ThreadID, b.Key.Seq); ok {
				out = append(out, memory.SearchResult{ThreadID: h.ThreadID, ThreadTitle: h.ThreadTitle, Message: h.Message, Score: b.Score})
			}
			continue
		}
		r := memory.SearchResult{Score: b.Score}
		m, err := scanMessage(s.stVectorHit.QueryRowContext(ctx, b.Key.ThreadID, b.Key.Seq),
			&r.ThreadID, &r.ThreadTitle)
		if err == nil {
			r.Message = m
			out = append(out, r)
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("searching vectors: %w", err)
		}
		// Deleted since its vector was read: not a result.
	}
	if q.Context > 0 {
		if err := s.Around(ctx, out, q.Context); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DropVectors implements memory.Vectors.
func (s *Store) DropVectors(ctx context.Context, model string) (int64, error) {
	var n int64
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM message_vectors WHERE model <> ?`, model)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("dropping vectors of other models: %w", err)
	}
	return n, nil
}
