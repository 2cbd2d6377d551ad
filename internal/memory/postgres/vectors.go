package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/companionhq/companion/internal/memory"
)

// The vector index is message_vectors (migration 0010). A message's
// position (memory.Unembedded.Pos) is the id of its row in message_search,
// which grows as messages are stored; the query names it id + 0, as its
// index (migration 0010) does.

// Unembedded implements memory.Vectors.
func (s *Store) Unembedded(ctx context.Context, model string, after int64, limit int) ([]memory.Unembedded, error) {
	rows, err := s.pool.Query(ctx, `SELECT s.id, m.thread_id, m.seq, m.id, s.resource_id, m.text
		FROM message_search s JOIN messages m ON m.thread_id = s.thread_id AND m.seq = s.seq
		WHERE s.id + 0 > $1 AND m.text <> ''
			AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.thread_id = s.thread_id AND v.seq = s.seq AND v.model = $2)
		ORDER BY s.id + 0 LIMIT $3`, after, model, limit)
	if err != nil {
		return nil, fmt.Errorf("reading messages to embed: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Unembedded, error) {
		var u memory.Unembedded
		err := r.Scan(&u.Pos, &u.ThreadID, &u.Seq, &u.ID, &u.ResourceID, &u.Text)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading messages to embed: %w", err)
	}
	return out, nil
}

// PutVectors implements memory.Vectors, in one round trip and one
// transaction.
func (s *Store) PutVectors(ctx context.Context, model string, vs []memory.MessageVector) error {
	if len(vs) == 0 {
		return nil
	}
	err := retryLost(ctx, func() error {
		var b pgx.Batch
		for _, v := range vs {
			b.Queue(`INSERT INTO message_vectors (thread_id, seq, resource_id, model, vec)
				SELECT m.thread_id, m.seq, t.resource_id, $4, $5 FROM messages m JOIN threads t ON t.id = m.thread_id
				WHERE m.thread_id = $1 AND m.seq = $2 AND m.id = $3
				ON CONFLICT (thread_id, seq) DO UPDATE SET resource_id = excluded.resource_id, model = excluded.model, vec = excluded.vec`,
				v.ThreadID, v.Seq, v.ID, model, memory.EncodeVector(v.Vec))
		}
		return s.pool.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("storing vectors: %w", err)
	}
	return nil
}

// SearchVectors implements memory.Vectors: the candidates' vectors are
// compared in process, then the nearest are read with their threads in
// one statement (nearestSQL); their messages hold what Search's do.
func (s *Store) SearchVectors(ctx context.Context, q memory.SearchQuery, model string, v []float32) ([]memory.SearchResult, error) {
	if q.Limit <= 0 || len(v) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT thread_id, seq, vec FROM message_vectors
		WHERE resource_id = $1 AND model = $2 AND $3::text IN ('', thread_id) AND thread_id <> $4
		ORDER BY id DESC LIMIT $5`, q.ResourceID, model, q.ThreadID, q.ExcludeThreadID, memory.VectorCandidates)
	if err != nil {
		return nil, fmt.Errorf("searching vectors: %w", err)
	}
	best, err := memory.NearestRows(v, q.Limit, rows)
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("searching vectors: %w", err)
	}
	if len(best) == 0 {
		return nil, nil
	}
	threads := make([]string, len(best))
	seqs := make([]int64, len(best))
	for i, k := range best {
		threads[i], seqs[i] = k.Key.ThreadID, k.Key.Seq
	}
	rows, err = s.pool.Query(ctx, nearestSQL, threads, seqs)
	if err != nil {
		return nil, fmt.Errorf("searching vectors: %w", err)
	}
	defer rows.Close()
	var r struct {
		i, seq          int64
		title, id, text string
		role            pgtype.DriverBytes
		created         time.Time
	}
	dest := []any{&r.i, &r.title, &r.seq, &r.id, &r.role, &r.text, &r.created}
	out := make([]memory.SearchResult, 0, len(best))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("searching vectors: %w", err)
		}
		k := best[r.i-1]
		out = append(out, memory.SearchResult{ThreadID: k.Key.ThreadID, ThreadTitle: r.title, Score: k.Score,
			Message: memory.Message{Seq: r.seq, ID: r.id, Role: role(r.role), Text: r.text, CreatedAt: r.created.UTC()}})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searching vectors: %w", err)
	}
	if q.Context > 0 && len(out) > 0 {
		if err := s.Around(ctx, out, q.Context); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nearestSQL reads the messages of threads $1 and seqs $2 (each pair a
// message's key) with their threads' titles, each row the index of its
// pair (from 1), in the pairs' order; none for a message deleted since
// its vector was read. The pairs are walked by their indexes, as in
// aroundSQL (which says why); each message and title is read by its key
// for its pair (laterally, and in a subquery: joined, a plan for 1,000
// pairs could hash every thread).
const nearestSQL = `SELECT r.i, (SELECT title FROM threads WHERE id = m.thread_id), m.seq, m.id, m.role, m.text, m.created_at
	FROM generate_subscripts($1::text[], 1) AS r (i)
	CROSS JOIN LATERAL (SELECT thread_id, seq, id, role, text, created_at FROM messages
		WHERE thread_id = ($1::text[])[r.i] AND seq = ($2::bigint[])[r.i]) m
	ORDER BY r.i`

// DropVectors implements memory.Vectors.
func (s *Store) DropVectors(ctx context.Context, model string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM message_vectors WHERE model <> $1`, model)
	if err != nil {
		return 0, fmt.Errorf("dropping vectors of other models: %w", err)
	}
	return tag.RowsAffected(), nil
}
