// Package postgres is the conversation store on PostgreSQL (pgx, pooled),
// for running several instances of the service on one database.
//
// A turn holds its thread with a session advisory lock, so turns on one
// thread never interleave across instances. The turn's reads and writes go
// through the connection that holds the lock: if that connection breaks,
// the lock and the writes go together. In front of the advisory lock, an
// in-process queue lines up one instance's own requests for a thread, so
// they wait without holding a connection each.
package postgres

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/locks"
	"github.com/companionhq/companion/internal/memory/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DefaultMaxConns is the pool size when the URL sets no pool_max_conns.
// Every turn in progress holds one connection for its whole run.
const DefaultMaxConns = 25

// Advisory lock keys are 64-bit hashes of a name that includes the schema,
// so that deployments (and tests) in different schemas of one database do
// not block each other.
const (
	threadKey  = `hashtextextended(current_schema() || '/thread/' || $1, 0)`
	migrateKey = `hashtextextended(current_schema() || '/migrate', 0)`
)

// connWait is the least a turn waits for a free connection.
const connWait = 5 * time.Second

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// lockNotAvailable is PostgreSQL's error code for a lock_timeout.
const lockNotAvailable = "55P03"

// Store is a memory.Store on PostgreSQL.
type Store struct {
	pool  *pgxpool.Pool
	locks locks.Set
}

var _ memory.Store = (*Store)(nil)

// Open connects to the database at url (a postgres:// URL; pool settings
// such as pool_max_conns and runtime parameters such as search_path may be
// given in it) and brings its schema up to date. Instances starting
// together migrate one at a time.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error may quote the URL, password included.
		return nil, errors.New("postgres: the database URL could not be parsed")
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	// A cancelled wait (a client that went away) is cancelled on the server
	// too, and the connection stays usable.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 2 * time.Second}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connecting to %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: migrating: %w", err)
	}
	return s, nil
}

// migrate applies the missing migrations under an advisory lock, each in
// its own transaction with its version row.
func (s *Store) migrate(ctx context.Context) error {
	all, err := migrate.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+migrateKey+`)`); err != nil {
		return fmt.Errorf("waiting for other instances' migrations: %w", err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(`+migrateKey+`)`); err != nil {
			_ = conn.Conn().Close(uctx)
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer NOT NULL PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return err
	}
	if current > len(all) {
		return migrate.Newer(current, len(all))
	}
	for _, m := range all[current:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// SchemaVersion is the version of the database's schema.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// Pool is the connection pool, for tests.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close implements memory.Store.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping implements memory.Store: the schema is at this build's version, and
// every table answers a query of the columns the store reads.
func (s *Store) Ping(ctx context.Context) error {
	all, err := migrate.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if v != len(all) {
		return fmt.Errorf("the schema is at version %d, this build expects %d", v, len(all))
	}
	var b pgx.Batch
	b.Queue(`SELECT ` + threadCols + `, last_seq FROM threads LIMIT 1`)
	b.Queue(`SELECT thread_id, ` + messageCols + ` FROM messages LIMIT 1`)
	b.Queue(`SELECT resource_id, day, tokens FROM usage LIMIT 1`)
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("checking the schema: %w", err)
	}
	return nil
}

// TokensUsed implements memory.Store.
func (s *Store) TokensUsed(ctx context.Context, resourceID, day string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT tokens FROM usage WHERE resource_id = $1 AND day = $2::date`, resourceID, day).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading token usage: %w", err)
	}
	return n, nil
}

// AddUsage implements memory.Store.
func (s *Store) AddUsage(ctx context.Context, u memory.Usage) error {
	if u.Tokens <= 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, addUsageSQL, u.ResourceID, u.Day, u.Tokens)
	if err != nil {
		return fmt.Errorf("counting token usage: %w", err)
	}
	return nil
}

const addUsageSQL = `INSERT INTO usage (resource_id, day, tokens) VALUES ($1, $2::date, $3)
	ON CONFLICT (resource_id, day) DO UPDATE SET tokens = usage.tokens + excluded.tokens`

const threadCols = `id, resource_id, title, metadata, created_at, updated_at, bytes`

// Thread implements memory.Store.
func (s *Store) Thread(ctx context.Context, id string) (memory.Thread, error) {
	return scanThread(s.pool.QueryRow(ctx, `SELECT `+threadCols+` FROM threads WHERE id = $1`, id))
}

// Threads implements memory.Store.
func (s *Store) Threads(ctx context.Context, resourceID string, order memory.ThreadOrder, offset, limit int) ([]memory.Thread, int, error) {
	col, dir := "created_at", "DESC"
	if order.ByUpdated {
		col = "updated_at"
	}
	if order.Ascending {
		dir = "ASC"
	}
	rows, err := s.pool.Query(ctx, `SELECT `+threadCols+` FROM threads WHERE resource_id = $1
		ORDER BY `+col+` `+dir+`, id `+dir+` LIMIT $2 OFFSET $3`, resourceID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("listing threads: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Thread, error) { return scanThread(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("listing threads: %w", err)
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM threads WHERE resource_id = $1`, resourceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("counting threads: %w", err)
	}
	return out, total, nil
}

// UpdateThread implements memory.Store.
func (s *Store) UpdateThread(ctx context.Context, id, resourceID string, title *string, metadata json.RawMessage, now time.Time) (memory.Thread, error) {
	var meta *string
	if metadata != nil {
		m := string(metadata)
		meta = &m
	}
	return scanThread(s.pool.QueryRow(ctx, `UPDATE threads SET title = coalesce($1, title), metadata = coalesce($2::jsonb, metadata), updated_at = $3
		WHERE id = $4 AND resource_id = $5 RETURNING `+threadCols, title, meta, memory.Micro(now), id, resourceID))
}

const messageCols = `seq, id, role, text, model, pending, run_id, created_at`

// Messages implements memory.Store. Seq runs 1..last_seq without gaps, so a
// page is a range of the primary key, however deep.
func (s *Store) Messages(ctx context.Context, threadID string, offset, limit int) ([]memory.Message, int, error) {
	var total int
	err := s.pool.QueryRow(ctx, `SELECT last_seq FROM threads WHERE id = $1`, threadID).Scan(&total)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, fmt.Errorf("thread %q: %w", threadID, memory.ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("counting messages: %w", err)
	}
	msgs, err := queryMessages(ctx, s.pool, `SELECT `+messageCols+` FROM messages WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, threadID, offset, limit)
	return msgs, total, err
}

// Lock implements memory.Store: first this instance's queue for the
// thread, then the advisory lock that all instances share, both within
// wait. The advisory lock's wait is bounded on the server (lock_timeout),
// so a request that gives up leaves no waiter behind.
func (s *Store) Lock(ctx context.Context, threadID string, wait time.Duration) (memory.Turn, error) {
	deadline := time.Now().Add(wait)
	release, err := s.locks.Acquire(ctx, threadID, wait)
	if errors.Is(err, locks.ErrTimeout) {
		return nil, fmt.Errorf("thread %q: %w", threadID, memory.ErrBusy)
	}
	if err != nil {
		return nil, err
	}
	t, err := s.lockShared(ctx, threadID, deadline)
	if err != nil {
		release()
		return nil, err
	}
	t.releaseLocal = release
	return t, nil
}

func (s *Store) lockShared(ctx context.Context, threadID string, deadline time.Time) (*turn, error) {
	// Waiting for a free connection is bounded apart from the turn's wait: a
	// turn that may not wait at all still needs a connection to ask.
	actx, cancel := context.WithDeadline(ctx, later(deadline, time.Now().Add(connWait)))
	conn, err := s.pool.Acquire(actx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			return nil, fmt.Errorf("no database connection became free for thread %q's turn: %w", threadID, err)
		}
		return nil, err
	}
	remaining := time.Until(deadline).Milliseconds()
	if remaining < 1 {
		var ok bool
		err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+threadKey+`)`, threadID).Scan(&ok)
		if err == nil && !ok {
			conn.Release()
			return nil, fmt.Errorf("thread %q: %w", threadID, memory.ErrBusy)
		}
	} else {
		// lock_timeout is set for this statement's transaction only; the
		// subquery makes it take effect before the lock is asked for.
		_, err = conn.Exec(ctx, `SELECT pg_advisory_lock(`+threadKey+`)
			FROM (SELECT set_config('lock_timeout', $2, true) AS t) AS timeout WHERE timeout.t IS NOT NULL`,
			threadID, fmt.Sprintf("%dms", remaining))
	}
	if err != nil {
		conn.Release()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == lockNotAvailable {
			return nil, fmt.Errorf("thread %q: %w", threadID, memory.ErrBusy)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("locking thread %q: %w", threadID, err)
	}
	return &turn{id: threadID, conn: conn}, nil
}

// turn is a memory.Turn on the connection that holds the advisory lock.
type turn struct {
	id           string
	conn         *pgxpool.Conn
	releaseLocal func()
	once         sync.Once
}

func (t *turn) Unlock() {
	t.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var ok bool
		if err := t.conn.QueryRow(ctx, `SELECT pg_advisory_unlock(`+threadKey+`)`, t.id).Scan(&ok); err != nil || !ok {
			// A connection that may still hold the lock must not go back to
			// the pool; closing it ends the session and frees the lock.
			_ = t.conn.Conn().Close(ctx)
		}
		t.conn.Release()
		t.releaseLocal()
	})
}

func (t *turn) Open(ctx context.Context, th memory.Thread) (memory.Thread, error) {
	meta := th.Metadata
	if meta == nil {
		meta = json.RawMessage(`{}`)
	}
	if _, err := t.conn.Exec(ctx, `INSERT INTO threads (id, resource_id, title, metadata, created_at, updated_at)
		VALUES ($1, $2, $3, $4::jsonb, $5, $6) ON CONFLICT (id) DO NOTHING`,
		t.id, th.ResourceID, th.Title, string(meta), memory.Micro(th.CreatedAt), memory.Micro(th.UpdatedAt)); err != nil {
		return memory.Thread{}, fmt.Errorf("creating thread %q: %w", t.id, err)
	}
	return t.Thread(ctx)
}

func (t *turn) Begin(ctx context.Context, th memory.Thread, n int, ids []string, plan memory.Plan) (memory.Thread, []memory.Message, error) {
	meta := th.Metadata
	if meta == nil {
		meta = json.RawMessage(`{}`)
	}
	cur := th
	var out []memory.Message
	err := pgx.BeginFunc(ctx, t.conn, func(tx pgx.Tx) error {
		// The reads go in one round trip.
		var b pgx.Batch
		b.Queue(`INSERT INTO threads (id, resource_id, title, metadata, created_at, updated_at)
			VALUES ($1, $2, $3, $4::jsonb, $5, $6) ON CONFLICT (id) DO NOTHING`,
			t.id, th.ResourceID, th.Title, string(meta), memory.Micro(th.CreatedAt), memory.Micro(th.UpdatedAt))
		b.Queue(`SELECT `+threadCols+` FROM threads WHERE id = $1`, t.id)
		b.Queue(`SELECT `+messageCols+` FROM messages WHERE thread_id = $1 ORDER BY seq DESC LIMIT $2`, t.id, max(n, 0))
		b.Queue(`SELECT id FROM messages WHERE thread_id = $1 AND id = ANY($2)`, t.id, ids)
		br := tx.SendBatch(ctx, &b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return fmt.Errorf("creating thread %q: %w", t.id, err)
		}
		var err error
		if cur, err = scanThread(br.QueryRow()); err != nil {
			br.Close()
			return err
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return fmt.Errorf("reading messages: %w", err)
		}
		tail, err := collectMessages(rows)
		if err != nil {
			br.Close()
			return err
		}
		slices.Reverse(tail)
		rows, err = br.Query()
		if err != nil {
			br.Close()
			return fmt.Errorf("looking up message ids: %w", err)
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			br.Close()
			return fmt.Errorf("looking up message ids: %w", err)
		}
		if err := br.Close(); err != nil {
			return err
		}
		known := make(map[string]bool, len(found))
		for _, id := range found {
			known[id] = true
		}
		msgs, err := plan(cur, tail, known)
		if err != nil || len(msgs) == 0 {
			return err
		}
		out, err = appendTx(ctx, tx, t.id, msgs)
		return err
	})
	if err != nil {
		return cur, nil, err
	}
	return cur, out, nil
}

func (t *turn) Thread(ctx context.Context) (memory.Thread, error) {
	return scanThread(t.conn.QueryRow(ctx, `SELECT `+threadCols+` FROM threads WHERE id = $1`, t.id))
}

func (t *turn) Tail(ctx context.Context, n int) ([]memory.Message, error) {
	if n <= 0 {
		return nil, nil
	}
	msgs, err := queryMessages(ctx, t.conn, `SELECT `+messageCols+` FROM messages WHERE thread_id = $1 ORDER BY seq DESC LIMIT $2`, t.id, n)
	if err != nil {
		return nil, err
	}
	slices.Reverse(msgs) // newest first as read; oldest first as returned
	return msgs, nil
}

func (t *turn) Known(ctx context.Context, ids []string) (map[string]bool, error) {
	known := map[string]bool{}
	if len(ids) == 0 {
		return known, nil
	}
	rows, err := t.conn.Query(ctx, `SELECT id FROM messages WHERE thread_id = $1 AND id = ANY($2)`, t.id, ids)
	if err != nil {
		return nil, fmt.Errorf("looking up message ids: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("looking up message ids: %w", err)
	}
	for _, id := range found {
		known[id] = true
	}
	return known, nil
}

func (t *turn) Append(ctx context.Context, msgs []memory.Message) ([]memory.Message, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	var out []memory.Message
	err := pgx.BeginFunc(ctx, t.conn, func(tx pgx.Tx) error {
		var err error
		out, err = appendTx(ctx, tx, t.id, msgs)
		return err
	})
	return out, err
}

func (t *turn) Answer(ctx context.Context, reply memory.Message, u memory.Usage) ([]memory.Message, memory.Message, error) {
	var answered, stored []memory.Message
	err := pgx.BeginFunc(ctx, t.conn, func(tx pgx.Tx) error {
		var err error
		answered, err = queryMessages(ctx, tx, `UPDATE messages SET pending = false WHERE thread_id = $1 AND pending RETURNING `+messageCols, t.id)
		if err != nil {
			return fmt.Errorf("marking messages answered: %w", err)
		}
		stored, err = appendTx(ctx, tx, t.id, []memory.Message{reply})
		if err != nil || u.Tokens <= 0 {
			return err
		}
		if _, err := tx.Exec(ctx, addUsageSQL, u.ResourceID, u.Day, u.Tokens); err != nil {
			return fmt.Errorf("counting token usage: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, memory.Message{}, err
	}
	slices.SortFunc(answered, func(a, b memory.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	return answered, stored[0], nil
}

func (t *turn) Delete(ctx context.Context) error {
	if _, err := t.conn.Exec(ctx, `DELETE FROM threads WHERE id = $1`, t.id); err != nil {
		return fmt.Errorf("deleting thread %q: %w", t.id, err)
	}
	return nil
}

// copyThreshold is the batch size from which COPY beats one INSERT per row.
const copyThreshold = 64

// appendTx numbers msgs after the thread's last message and inserts them.
func appendTx(ctx context.Context, tx pgx.Tx, threadID string, msgs []memory.Message) ([]memory.Message, error) {
	var latest time.Time
	var size int64
	for _, m := range msgs {
		if m.CreatedAt.After(latest) {
			latest = m.CreatedAt
		}
		size += m.Size()
	}
	var last int64
	err := tx.QueryRow(ctx, `UPDATE threads SET last_seq = last_seq + $1, updated_at = greatest(updated_at, $2), bytes = bytes + $4 WHERE id = $3 RETURNING last_seq`,
		len(msgs), memory.Micro(latest), threadID, size).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("thread %q: %w", threadID, memory.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("numbering messages: %w", err)
	}
	out := make([]memory.Message, len(msgs))
	rows := make([][]any, len(msgs))
	first := last - int64(len(msgs)) + 1
	for i, m := range msgs {
		m.Seq = first + int64(i)
		m.CreatedAt = memory.Micro(m.CreatedAt)
		rows[i] = []any{threadID, m.Seq, m.ID, m.Role, m.Text, string(m.Model), m.Pending, m.RunID, m.CreatedAt}
		out[i] = m
	}
	cols := []string{"thread_id", "seq", "id", "role", "text", "model", "pending", "run_id", "created_at"}
	if len(rows) >= copyThreshold {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"messages"}, cols, pgx.CopyFromRows(rows)); err != nil {
			return nil, fmt.Errorf("storing messages: %w", err)
		}
		return out, nil
	}
	var b pgx.Batch
	for _, r := range rows {
		b.Queue(`INSERT INTO messages (`+strings.Join(cols, ", ")+`) VALUES ($1, $2, $3, $4, $5, $6::json, $7, $8, $9)`, r...)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, fmt.Errorf("storing messages: %w", err)
	}
	return out, nil
}

func scanThread(r pgx.Row) (memory.Thread, error) {
	var t memory.Thread
	var meta []byte
	err := r.Scan(&t.ID, &t.ResourceID, &t.Title, &meta, &t.CreatedAt, &t.UpdatedAt, &t.Bytes)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, memory.ErrNotFound
	}
	if err != nil {
		return t, fmt.Errorf("reading a thread: %w", err)
	}
	t.Metadata = json.RawMessage(meta)
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return t, nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryMessages(ctx context.Context, q querier, query string, args ...any) ([]memory.Message, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading messages: %w", err)
	}
	return collectMessages(rows)
}

func collectMessages(rows pgx.Rows) ([]memory.Message, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Message, error) {
		var m memory.Message
		var model []byte
		if err := r.Scan(&m.Seq, &m.ID, &m.Role, &m.Text, &model, &m.Pending, &m.RunID, &m.CreatedAt); err != nil {
			return m, err
		}
		m.Model = json.RawMessage(model)
		m.CreatedAt = m.CreatedAt.UTC()
		return m, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading messages: %w", err)
	}
	return out, nil
}
