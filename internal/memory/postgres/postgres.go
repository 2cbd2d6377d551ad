// Package postgres is the conversation store on PostgreSQL (pgx, pooled),
// for running several instances of the service on one database.
//
// A turn holds its thread with a lease (a row of thread_leases, renewed
// while the turn lasts), so turns on one thread never interleave across
// instances, and a turn holds no connection while the model answers. A
// lease names its instance's presence, an advisory lock held on a
// connection of its own, so that a crashed instance's leases are free as
// soon as the server sees its connections close. Every
// write of a turn checks in its transaction that the lease is still its
// own. In front of the lease, an in-process queue lines up one instance's
// own requests for a thread.
package postgres

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
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

// Advisory lock keys are 64-bit hashes of a name that includes the schema,
// so that deployments (and tests) in different schemas of one database do
// not block each other.
const migrateKey = `hashtextextended(current_schema() || '/migrate', 0)`

// Store is a memory.Store on PostgreSQL.
type Store struct {
	pool  *pgxpool.Pool
	locks locks.Set
	// latest is the schema version this build migrates to, for Ping.
	latest int
	// presence frees this instance's leases the moment its connections
	// drop (presence.go).
	presence *presence

	// held is the turns holding a lease, which one goroutine renews
	// together (a goroutine and a timer for each would cost every open
	// stream their memory); stop ends it, and done is closed when it has.
	mu         sync.Mutex
	held       map[*turn]struct{}
	stop, done chan struct{}
	closing    sync.Once
}

var (
	_ memory.Store        = (*Store)(nil)
	_ memory.LockBeginner = (*Store)(nil)
)

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
	// Without pool_max_conns the pool is pgx's default, as many connections
	// as the machine has CPUs (at least 4): a turn holds one only for its
	// statements, never while the model answers, and PostgreSQL on a few
	// cores serves a turn a quarter faster from 4 or 8 backends than from 25,
	// which contend for its locks.
	// A cancelled wait (a client that went away) is cancelled on the server
	// too, and the connection stays usable.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 2 * time.Second}
	}
	// Every statement of the store is meant to be an index lookup. A plan
	// made while a table was analysed (or vacuumed) at a page or three
	// scans the table instead, and the connections keep such plans cached
	// until the table is analysed again, while it grows: up to a minute of
	// autovacuum's nap on a busy new database, each turn reading whole
	// tables. Without sequential scans, the plans stay index lookups
	// whatever the statistics were (TestPlansOutlastTinyTables); what it
	// costs is an index lookup where a scan of one page would have done.
	// The URL may still set it.
	if _, set := cfg.ConnConfig.RuntimeParams["enable_seqscan"]; !set {
		cfg.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
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
	if s.presence, err = startPresence(ctx, cfg.ConnConfig.Copy()); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s.held, s.stop, s.done = map[*turn]struct{}{}, make(chan struct{}), make(chan struct{})
	go s.renew()
	return s, nil
}

// migrate applies the missing migrations under an advisory lock, each in
// its own transaction with its version row.
func (s *Store) migrate(ctx context.Context) error {
	all, err := migrate.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	s.latest = len(all)
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

// Close implements memory.Store.
func (s *Store) Close() error {
	s.closing.Do(func() {
		close(s.stop)
		<-s.done
		s.presence.close()
	})
	s.pool.Close()
	return nil
}

// Ping implements memory.Store: the schema is at this build's version, and
// every table answers a query of the columns the store reads.
func (s *Store) Ping(ctx context.Context) error {
	if err := migrate.Current(ctx, s.latest, s.SchemaVersion); err != nil {
		return err
	}
	var b pgx.Batch
	b.Queue(`SELECT ` + threadCols + `, last_seq FROM threads LIMIT 1`)
	b.Queue(`SELECT thread_id, ` + messageCols + ` FROM messages LIMIT 1`)
	b.Queue(`SELECT resource_id, day, tokens, cost FROM usage LIMIT 1`)
	b.Queue(`SELECT resource_id, day, thread_id, tokens, cost FROM thread_usage LIMIT 1`)
	b.Queue(`SELECT day, locale, count FROM crisis_referrals LIMIT 1`)
	b.Queue(`SELECT resource_id, minor, updated_at FROM resource_settings LIMIT 1`)
	b.Queue(`SELECT ` + workingMemoryCols + ` FROM working_memory LIMIT 1`)
	b.Queue(`SELECT thread_id, seq, resource_id, doc FROM message_search LIMIT 1`)
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("checking the schema: %w", err)
	}
	// A write of its own: a database that cannot write is not ready,
	// though it still reads.
	if _, err := s.pool.Exec(ctx, `INSERT INTO ready_probe (id, at) VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET at = excluded.at`); err != nil {
		return writeErr(fmt.Errorf("writing: %w", err))
	}
	return nil
}

// writeErr is err as a *memory.WriteError when PostgreSQL says it cannot
// write, else err.
func writeErr(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	var reason string
	switch {
	case pe.Code == "53100": // disk_full
		reason = "the database server's disk is full"
	case strings.HasPrefix(pe.Code, "53"): // insufficient resources
		reason = "the database server is out of resources"
	case pe.Code == "25006": // read_only_sql_transaction
		reason = "the database is read-only"
	default:
		return err
	}
	return &memory.WriteError{Reason: reason, Err: err}
}

// Used implements memory.Store.
func (s *Store) Used(ctx context.Context, resourceID, day string) (int64, float64, error) {
	var n int64
	var cost float64
	err := s.pool.QueryRow(ctx, usedSQL, resourceID, day).Scan(&n, &cost)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("reading usage: %w", err)
	}
	return n, cost, nil
}

// UsageBetween implements memory.Store.
func (s *Store) UsageBetween(ctx context.Context, resourceID, from, to string) ([]memory.DayUsage, error) {
	rows, err := s.pool.Query(ctx, `SELECT to_char(u.day, 'YYYY-MM-DD'), u.tokens, u.cost, t.thread_id, t.tokens, t.cost
		FROM usage u LEFT JOIN thread_usage t ON t.resource_id = u.resource_id AND t.day = u.day
		WHERE u.resource_id = $1 AND u.day BETWEEN $2::date AND $3::date
		ORDER BY u.day, t.tokens DESC, t.thread_id`, resourceID, from, to)
	if err != nil {
		return nil, fmt.Errorf("reading usage: %w", err)
	}
	defer rows.Close()
	var out []memory.DayUsage
	for rows.Next() {
		var d memory.DayUsage
		var thread *string
		var tt *int64
		var tc *float64
		if err := rows.Scan(&d.Day, &d.Tokens, &d.Cost, &thread, &tt, &tc); err != nil {
			return nil, fmt.Errorf("reading usage: %w", err)
		}
		var share *memory.ThreadUsage
		if thread != nil {
			share = &memory.ThreadUsage{ThreadID: *thread, Tokens: *tt, Cost: *tc}
		}
		out = memory.AddDayUsage(out, d, share)
	}
	return out, rows.Err()
}

// AddUsage implements memory.Store: one round trip, the batch's two
// statements one implicit transaction.
func (s *Store) AddUsage(ctx context.Context, u memory.Usage) error {
	if !u.Counts() {
		return nil
	}
	var b pgx.Batch
	queueUsage(&b, u)
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("counting usage: %w", err)
	}
	return nil
}

// queueUsage queues onto b the two statements that count u (two results).
func queueUsage(b *pgx.Batch, u memory.Usage) {
	b.Queue(`INSERT INTO usage (resource_id, day, tokens, cost) VALUES ($1, $2::date, $3, $4)
		ON CONFLICT (resource_id, day) DO UPDATE SET tokens = usage.tokens + excluded.tokens, cost = usage.cost + excluded.cost`,
		u.ResourceID, u.Day, u.Tokens, u.Cost)
	b.Queue(`INSERT INTO thread_usage (resource_id, day, thread_id, tokens, cost) VALUES ($1, $2::date, $3, $4, $5)
		ON CONFLICT (resource_id, day, thread_id) DO UPDATE SET tokens = thread_usage.tokens + excluded.tokens, cost = thread_usage.cost + excluded.cost`,
		u.ResourceID, u.Day, u.ThreadID, u.Tokens, u.Cost)
}

const threadCols = `id, resource_id, title, metadata, created_at, updated_at, bytes`

// Thread implements memory.Store.
func (s *Store) Thread(ctx context.Context, id string) (memory.Thread, error) {
	return scanThread(s.pool.QueryRow(ctx, threadSQL, id))
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
		WHERE id = $4 AND resource_id = $5 RETURNING `+threadCols, title, meta, memory.AsStored(now), id, resourceID))
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

// Lease bounds how long a turn's hold on its thread outlives an instance
// that stopped renewing it while still connected (a hung process); an
// instance whose connections dropped (a crash) lets go at once (presence.go).
// Renewals come every Lease/3.
const Lease = 30 * time.Second

// errLeaseLost is the error of a turn whose lease another instance took
// (it was not renewed in time).
var errLeaseLost = errors.New("the turn's hold on its thread was lost")

// Lock implements memory.Store: first this instance's queue for the
// thread, then the lease that all instances share (thread_leases), both
// within wait. Waiting for the lease polls, from 5 ms to 200 ms apart: a
// thread busy on another instance is rare, one busy on this one waits in
// the queue. The turn holds no connection while it lasts.
func (s *Store) Lock(ctx context.Context, threadID string, wait time.Duration) (memory.Turn, error) {
	deadline := time.Now().Add(wait)
	release, err := s.acquire(ctx, threadID, wait)
	if err != nil {
		return nil, err
	}
	t, err := s.lease(ctx, threadID, deadline)
	if err != nil {
		release()
		return nil, err
	}
	t.releaseLocal = release
	return t, nil
}

// acquire takes thread threadID's lock in this instance, waiting up to
// wait: turns on one thread queue here before they ask for its lease. A
// thread still busy after wait is ErrBusy.
func (s *Store) acquire(ctx context.Context, threadID string, wait time.Duration) (release func(), err error) {
	release, err = s.locks.Acquire(ctx, threadID, wait)
	if errors.Is(err, locks.ErrTimeout) {
		return nil, fmt.Errorf("thread %q: %w", threadID, memory.ErrBusy)
	}
	return release, err
}

// hold counts t among the turns whose leases the renewer keeps.
func (s *Store) hold(t *turn) {
	s.mu.Lock()
	s.held[t] = struct{}{}
	s.mu.Unlock()
}

func (s *Store) lease(ctx context.Context, threadID string, deadline time.Time) (*turn, error) {
	owner := s.presence.owner(uuid.NewString())
	pause := 5 * time.Millisecond
	for {
		taken, err := s.takeLease(ctx, threadID, owner)
		switch {
		case taken:
			t := &turn{s: s, id: threadID, owner: owner}
			s.hold(t)
			return t, nil
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("locking thread %q: %w", threadID, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("thread %q: %w", threadID, memory.ErrBusy)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(pause, left)):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// takeLease takes the thread's lease for owner if it is free or expired,
// in one round trip. Its commit does not wait for the write-ahead log to
// reach the disk (synchronous_commit is off for this transaction alone): a
// lease that a crash of the database forgets is a lease lost, which every
// later write of the turn checks for, so waiting would buy nothing.
func (s *Store) takeLease(ctx context.Context, threadID, owner string) (taken bool, err error) {
	err = s.within(ctx, func(conn *pgxpool.Conn) error {
		var b pgx.Batch
		b.Queue(`BEGIN`)
		b.Queue(`SET LOCAL synchronous_commit TO off`)
		b.Queue(takeSQL+` RETURNING owner`, threadID, owner, Lease.String())
		b.Queue(`COMMIT`)
		return readBatch(conn.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
			for range 2 {
				if _, err := br.Exec(); err != nil {
					return err
				}
			}
			var got string
			switch err := br.QueryRow().Scan(&got); {
			case err == nil:
				taken = true
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
			return committed(br.Exec())
		})
	})
	return taken, err
}

// within runs fn on a connection of the pool. fn may open a transaction by
// queueing BEGIN in front of its first batch and end it by queueing COMMIT
// after its last, saving the round trips of both; when fn returns with the
// transaction still open (a statement failed, so the server skipped the
// rest of the batch and its COMMIT), within rolls it back, so that the
// connection returns to the pool clean.
func (s *Store) within(ctx context.Context, fn func(conn *pgxpool.Conn) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	err = fn(conn)
	if conn.Conn().PgConn().TxStatus() != 'I' {
		if err == nil {
			err = errors.New("a transaction was left open")
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		// A connection that cannot roll back is closed on release.
		_, _ = conn.Exec(rctx, `ROLLBACK`)
	}
	return err
}

// readBatch reads br's results with read, then closes it.
func readBatch(br pgx.BatchResults, read func(br pgx.BatchResults) error) error {
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// committed checks the result of a COMMIT: PostgreSQL answers the COMMIT
// of a failed transaction with ROLLBACK, not an error.
func committed(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("committing: the transaction ended in %s", tag)
	}
	return nil
}

// renew extends the leases of the turns in s.held every Lease/3, until
// Close.
func (s *Store) renew() {
	defer close(s.done)
	tick := time.NewTicker(Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), Lease/3)
			// A lease not renewed is a lease that may be lost: the turn's
			// writes check for that.
			_ = s.renewLeases(ctx)
			cancel()
		}
	}
}

// renewLeases extends every lease s.held holds, in one statement.
func (s *Store) renewLeases(ctx context.Context) error {
	s.mu.Lock()
	threads, owners := make([]string, 0, len(s.held)), make([]string, 0, len(s.held))
	for t := range s.held {
		threads, owners = append(threads, t.id), append(owners, t.owner)
	}
	s.mu.Unlock()
	if len(threads) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `UPDATE thread_leases SET expires = now() + $3::interval
		FROM unnest($1::text[], $2::text[]) AS held (thread_id, owner)
		WHERE thread_leases.thread_id = held.thread_id AND thread_leases.owner = held.owner`,
		threads, owners, Lease.String())
	if err != nil {
		return fmt.Errorf("renewing %d leases: %w", len(threads), err)
	}
	return nil
}

// turn is a memory.Turn held by a lease; its reads and writes go through
// the pool, and its writes check that the lease is still its own.
type turn struct {
	s            *Store
	id, owner    string
	releaseLocal func()
	once         sync.Once
	// released is set once Answer's transaction, which drops the lease,
	// has committed: Unlock has no lease left to delete.
	released atomic.Bool
}

func (t *turn) Unlock() {
	t.once.Do(func() {
		t.s.mu.Lock()
		delete(t.s.held, t)
		t.s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// A lease that cannot be deleted expires on its own.
		if !t.released.Load() {
			_, _ = t.s.pool.Exec(ctx, `DELETE FROM thread_leases WHERE thread_id = $1 AND owner = $2`, t.id, t.owner)
		}
		t.releaseLocal()
	})
}

// The statements that check, inside a transaction, that the turn's lease
// is its own, and raise leaseLostCode when it is not (turn_holds, migration
// 0006), so that the statements queued behind them in the same batch are
// rolled back with them: holdSQL keeps the lease so until the transaction
// ends; releaseSQL drops it when the transaction commits (Answer, a turn's
// last write, saves the commit and the round trip of a separate delete).
const (
	// takeSQL takes thread $1's lease for owner $2, for $3, when it is
	// free, expired, or held by an instance that is gone (its presence,
	// presence.go); it changes nothing when another turn holds it.
	takeSQL = `INSERT INTO thread_leases (thread_id, owner, expires) VALUES ($1, $2, now() + $3::interval)
			ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
			WHERE thread_leases.expires < now() OR NOT lease_holder_alive(thread_leases.owner)`
	holdSQL       = `SELECT turn_holds($1, $2, false)`
	releaseSQL    = `SELECT turn_holds($1, $2, true)`
	leaseLostCode = "CL001"
)

// leaseErr is err, or errLeaseLost when err is turn_holds' for a lost lease.
func (t *turn) leaseErr(err error) error {
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == leaseLostCode {
		return fmt.Errorf("thread %q: %w", t.id, errLeaseLost)
	}
	return err
}

func (t *turn) Open(ctx context.Context, th memory.Thread) (memory.Thread, error) {
	meta := th.Metadata
	if meta == nil {
		meta = json.RawMessage(`{}`)
	}
	if _, err := t.s.pool.Exec(ctx, `INSERT INTO threads (id, resource_id, title, metadata, created_at, updated_at)
		VALUES ($1, $2, $3, $4::jsonb, $5, $6) ON CONFLICT (id) DO NOTHING`,
		t.id, th.ResourceID, th.Title, string(meta), memory.AsStored(th.CreatedAt), memory.AsStored(th.UpdatedAt)); err != nil {
		return memory.Thread{}, fmt.Errorf("creating thread %q: %w", t.id, err)
	}
	return t.Thread(ctx)
}

func (t *turn) Begin(ctx context.Context, th memory.Thread, n int, ids []string, plan memory.Plan) (memory.Thread, []memory.Message, error) {
	return t.begin(ctx, th, n, ids, plan, beginWith{})
}

// LockBegin implements memory.LockBeginner: the lease is taken in the
// transaction of Begin's writes, its insert in the batch of Begin's reads,
// in front of the lease's check, which raises when the lease is another
// turn's: the thread is busy, and the transaction, lease and all, rolls
// back. A round trip and a transaction less than Lock and Begin; the lease
// commits with the turn's first messages, waiting for the disk as they do.
func (s *Store) LockBegin(ctx context.Context, th memory.Thread, n int, ids []string, plan memory.Plan) (memory.Turn, memory.Thread, []memory.Message, error) {
	return s.LockBeginReading(ctx, th, n, ids, plan, memory.BeginReads{})
}

// LockBeginReading is LockBegin that makes reads too (working memory as
// WorkingMemory reads it, a resource's settings as ResourceSettings does),
// in the batch of Begin's reads: a turn that needs them saves a round
// trip each. On an error, what reads holds is not to be used.
func (s *Store) LockBeginReading(ctx context.Context, th memory.Thread, n int, ids []string, plan memory.Plan, reads memory.BeginReads) (memory.Turn, memory.Thread, []memory.Message, error) {
	release, err := s.acquire(ctx, th.ID, 0)
	if err != nil {
		return nil, th, nil, err
	}
	t := &turn{s: s, id: th.ID, owner: s.presence.owner(uuid.NewString()), releaseLocal: release}
	held := false
	defer func() {
		if !held {
			release()
		}
	}()
	cur, out, err := t.begin(ctx, th, n, ids, plan, beginWith{take: true, reads: reads})
	if errors.Is(err, errLeaseLost) {
		return nil, cur, nil, fmt.Errorf("thread %q: %w", th.ID, memory.ErrBusy)
	}
	if err != nil {
		return nil, cur, nil, err
	}
	s.hold(t)
	held = true
	return t, cur, out, nil
}

// beginWith is what begin does besides Begin's: take, the lease
// (LockBegin); reads, those of LockBeginReading.
type beginWith struct {
	take  bool
	reads memory.BeginReads
}

// begin is Begin, and what with asks besides.
func (t *turn) begin(ctx context.Context, th memory.Thread, n int, ids []string, plan memory.Plan, with beginWith) (memory.Thread, []memory.Message, error) {
	meta := th.Metadata
	if meta == nil {
		meta = json.RawMessage(`{}`)
	}
	cur := th
	var out []memory.Message
	// A lost connection is tried again on a fresh one (retryLost): the
	// transaction rolled back, so the plan starts over.
	err := retryLost(ctx, func() error {
		cur, out = th, nil
		return t.s.within(ctx, func(conn *pgxpool.Conn) error {
			// Two round trips: BEGIN, the lease's check and the reads in one;
			// the writes the plan makes of them and COMMIT in the other (a
			// third when the messages are many enough to be copied in).
			var b pgx.Batch
			b.Queue(`BEGIN`)
			if with.take {
				b.Queue(takeSQL, t.id, t.owner, Lease.String())
			}
			b.Queue(holdSQL, t.id, t.owner)
			b.Queue(`INSERT INTO threads (id, resource_id, title, metadata, created_at, updated_at)
			VALUES ($1, $2, $3, $4::jsonb, $5, $6) ON CONFLICT (id) DO NOTHING`,
				t.id, th.ResourceID, th.Title, string(meta), memory.AsStored(th.CreatedAt), memory.AsStored(th.UpdatedAt))
			b.Queue(threadSQL, t.id)
			b.Queue(tailSQL, t.id, max(n, 0))
			b.Queue(knownSQL, t.id, ids)
			wm, rs := with.reads.WorkingMemory, with.reads.Settings
			if wm != nil {
				b.Queue(currentWorkingMemorySQL, wm.Scope, wm.Key)
			}
			if rs != nil {
				b.Queue(resourceSettingsSQL, rs.ResourceID)
			}
			var tail []memory.Message
			var known map[string]bool
			var wmRead memory.WorkingMemory
			var rsRead memory.ResourceSettings
			err := readBatch(conn.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
				if _, err := br.Exec(); err != nil {
					return err
				}
				if with.take {
					if _, err := br.Exec(); err != nil {
						return fmt.Errorf("locking thread %q: %w", t.id, err)
					}
				}
				if _, err := br.Exec(); err != nil {
					return t.leaseErr(err)
				}
				if _, err := br.Exec(); err != nil {
					return fmt.Errorf("creating thread %q: %w", t.id, err)
				}
				var err error
				if cur, err = scanThread(br.QueryRow()); err != nil {
					return err
				}
				rows, err := br.Query()
				if err != nil {
					return fmt.Errorf("reading messages: %w", err)
				}
				if tail, err = collectMessages(rows); err != nil {
					return err
				}
				slices.Reverse(tail)
				if known, err = collectKnown(br.Query()); err != nil {
					return err
				}
				// Read into copies: a try again after a lost connection
				// (retryLost) queues what wm and rs name.
				if wm != nil {
					if wmRead, err = scanCurrentWorkingMemory(br.QueryRow(), wm.Scope, wm.Key); err != nil {
						return err
					}
				}
				if rs != nil {
					if rsRead, err = scanResourceSettings(br.QueryRow(), rs.ResourceID); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			msgs, err := plan(cur, tail, known)
			if err != nil {
				return err
			}
			if out, err = appendCommit(ctx, conn, t.id, msgs); err != nil {
				return err
			}
			if wm != nil {
				*wm = wmRead
			}
			if rs != nil {
				*rs = rsRead
			}
			return nil
		})
	})
	if err != nil {
		return cur, nil, err
	}
	return cur, out, nil
}

func (t *turn) Thread(ctx context.Context) (memory.Thread, error) {
	return scanThread(t.s.pool.QueryRow(ctx, threadSQL, t.id))
}

func (t *turn) Tail(ctx context.Context, n int) ([]memory.Message, error) {
	if n <= 0 {
		return nil, nil
	}
	msgs, err := queryMessages(ctx, t.s.pool, tailSQL, t.id, n)
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
	return collectKnown(t.s.pool.Query(ctx, knownSQL, t.id, ids))
}

func (t *turn) Append(ctx context.Context, msgs []memory.Message) ([]memory.Message, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	var out []memory.Message
	err := t.s.within(ctx, func(conn *pgxpool.Conn) error {
		var b pgx.Batch
		b.Queue(`BEGIN`)
		b.Queue(holdSQL, t.id, t.owner)
		if err := readBatch(conn.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return err
			}
			_, err := br.Exec()
			return t.leaseErr(err)
		}); err != nil {
			return err
		}
		var err error
		out, err = appendCommit(ctx, conn, t.id, msgs)
		return err
	})
	return out, err
}

func (t *turn) Answer(ctx context.Context, reply memory.Message, u memory.Usage) ([]memory.Message, memory.Message, error) {
	// One round trip: a batch sent outside a transaction runs as one
	// implicit transaction, which the lease's check (and drop) rolls back
	// when it raises. In it: the answered marks, the reply, the usage.
	counted := u.Counts()
	var answered, stored []memory.Message
	err := retryLost(ctx, func() error {
		var b pgx.Batch
		b.Queue(releaseSQL, t.id, t.owner)
		b.Queue(answeredSQL, t.id)
		readAppend := queueAppend(&b, t.id, []memory.Message{reply})
		if counted {
			queueUsage(&b, u)
		}
		return readBatch(t.s.pool.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
			return t.readAnswer(br, readAppend, counted, &answered, &stored)
		})
	})
	if err != nil {
		return nil, memory.Message{}, err
	}
	t.released.Store(true)
	slices.SortFunc(answered, func(a, b memory.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	return answered, stored[0], nil
}

// readAnswer reads the results of Answer's batch.
func (t *turn) readAnswer(br pgx.BatchResults, readAppend func(pgx.BatchResults) ([]memory.Message, error), counted bool, answered, stored *[]memory.Message) error {
	if _, err := br.Exec(); err != nil {
		return t.leaseErr(err)
	}
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("marking messages answered: %w", err)
	}
	if *answered, err = collectMessages(rows); err != nil {
		return fmt.Errorf("marking messages answered: %w", err)
	}
	if *stored, err = readAppend(br); err != nil {
		return err
	}
	if counted {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("counting usage: %w", err)
			}
		}
	}
	return nil
}

// retryLost runs fn, and once more when it failed because its connection
// was lost (a backend terminated, a server restarted, a network cut): the
// pool gives the second try a fresh connection. fn must be a whole
// transaction, which the lost connection rolled back; a turn's writes are,
// and each checks the turn's lease, so a try whose commit went through
// unseen cannot be written twice.
func retryLost(ctx context.Context, fn func() error) error {
	err := fn()
	if err != nil && connLost(err) && ctx.Err() == nil {
		err = fn()
	}
	return err
}

// connLost reports whether err says the connection it came on was lost.
func connLost(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// connection_exception; admin_shutdown, crash_shutdown,
		// cannot_connect_now.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) || pgconn.SafeToRetry(err)
}

func (t *turn) Delete(ctx context.Context) error {
	// Like every write of a turn, only while its lease is its own: one
	// implicit transaction, as in Answer.
	var b pgx.Batch
	b.Queue(holdSQL, t.id, t.owner)
	b.Queue(`DELETE FROM working_memory WHERE scope = $1 AND key = $2`, memory.ScopeThread, t.id)
	b.Queue(`DELETE FROM threads WHERE id = $1`, t.id)
	err := readBatch(t.s.pool.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return t.leaseErr(err)
		}
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("deleting thread %q: %w", t.id, err)
	}
	return nil
}

// tailSQL reads a thread's last $2 messages, newest first; knownSQL which
// of the ids $2 it holds. A turn's Begin batches them, and Tail and Known
// run them alone.
//
// knownSQL looks each id up in the (thread_id, id) index on its own: the
// LIMIT keeps the lookup from being planned as a join. Written as
// "thread_id = $1 AND id = ANY($2)", the generic plan that PostgreSQL's
// plan cache switches to after a statement's first five executions looked
// the thread up by thread_id alone and filtered the ids, reading every
// message of the thread, whenever the statistics said threads are short
// (TestKnownLooksIdsUp).
const (
	tailSQL  = `SELECT ` + messageCols + ` FROM messages WHERE thread_id = $1 ORDER BY seq DESC LIMIT $2`
	knownSQL = `SELECT k.id FROM unnest($2::text[]) AS k (id),
		LATERAL (SELECT 1 FROM messages m WHERE m.thread_id = $1 AND m.id = k.id LIMIT 1) AS found`
)

// The other statements of a turn, named for TestPlansOutlastTinyTables.
const (
	threadSQL = `SELECT ` + threadCols + ` FROM threads WHERE id = $1`
	// answeredSQL marks the thread's pending messages answered.
	answeredSQL = `UPDATE messages SET pending = false WHERE thread_id = $1 AND pending RETURNING ` + messageCols
	// numberSQL makes room for $1 messages after the thread's last.
	numberSQL = `UPDATE threads SET last_seq = last_seq + $1, updated_at = greatest(updated_at, $2), bytes = bytes + $4 WHERE id = $3 RETURNING last_seq`
	usedSQL   = `SELECT tokens, cost FROM usage WHERE resource_id = $1 AND day = $2::date`
)

// collectKnown reads the ids knownSQL found.
func collectKnown(rows pgx.Rows, err error) (map[string]bool, error) {
	if err != nil {
		return nil, fmt.Errorf("looking up message ids: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("looking up message ids: %w", err)
	}
	known := make(map[string]bool, len(found))
	for _, id := range found {
		known[id] = true
	}
	return known, nil
}

// copyThreshold is the batch size from which COPY beats one INSERT per row.
const copyThreshold = 64

// appendCommit numbers msgs (which may be none) after the thread's last
// message, inserts them, indexes them for search and commits the
// transaction open on conn: one round trip, or three with COPY for many
// messages (the numbering; the copy; the index and COMMIT).
func appendCommit(ctx context.Context, conn *pgxpool.Conn, threadID string, msgs []memory.Message) ([]memory.Message, error) {
	if len(msgs) >= copyThreshold {
		out, err := copyMessages(ctx, conn, threadID, msgs)
		if err != nil {
			return nil, err
		}
		var b pgx.Batch
		b.Queue(indexSQL, threadID, len(msgs))
		b.Queue(`COMMIT`)
		if err := readBatch(conn.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("indexing messages: %w", err)
			}
			return committed(br.Exec())
		}); err != nil {
			return nil, err
		}
		return out, nil
	}
	var b pgx.Batch
	var read func(br pgx.BatchResults) ([]memory.Message, error)
	if len(msgs) > 0 {
		read = queueAppend(&b, threadID, msgs)
	}
	b.Queue(`COMMIT`)
	var out []memory.Message
	err := readBatch(conn.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
		if read != nil {
			var err error
			if out, err = read(br); err != nil {
				return err
			}
		}
		return committed(br.Exec())
	})
	return out, err
}

var (
	messageInsertCols = []string{"thread_id", "seq", "id", "role", "text", "model", "pending", "run_id", "created_at"}
	// insertMessageSQL inserts a message numbered $9 before the thread's
	// last (numberSQL made room for it).
	insertMessageSQL = `INSERT INTO messages (` + strings.Join(messageInsertCols, ", ") + `)
		VALUES ($1, (SELECT last_seq FROM threads WHERE id = $1) - $9, $2, $3, $4, $5::json, $6, $7, $8)`
)

// queueAppend queues onto b the statements that number msgs after the
// thread's last message, insert them and index them for search (indexSQL);
// read reads their results from the batch's, in the order queued. Each
// message's seq is computed by the server from the thread's new last_seq,
// so the inserts need not wait for the numbering's answer.
func queueAppend(b *pgx.Batch, threadID string, msgs []memory.Message) (read func(br pgx.BatchResults) ([]memory.Message, error)) {
	latest, size := extent(msgs)
	b.Queue(numberSQL, len(msgs), memory.AsStored(latest), threadID, size)
	for i, m := range msgs {
		b.Queue(insertMessageSQL, threadID, m.ID, m.Role, m.Text, string(m.Model), m.Pending, m.RunID, memory.AsStored(m.CreatedAt), int64(len(msgs)-1-i))
	}
	b.Queue(indexSQL, threadID, len(msgs))
	return func(br pgx.BatchResults) ([]memory.Message, error) {
		var last int64
		err := br.QueryRow().Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("thread %q: %w", threadID, memory.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("numbering messages: %w", err)
		}
		out := numbered(msgs, last)
		for _, m := range out {
			if _, err := br.Exec(); err != nil {
				return nil, fmt.Errorf("storing message %q: %w", m.ID, err)
			}
		}
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("indexing messages: %w", err)
		}
		return out, nil
	}
}

// copyMessages numbers many messages, then copies them in (appendCommit).
func copyMessages(ctx context.Context, tx *pgxpool.Conn, threadID string, msgs []memory.Message) ([]memory.Message, error) {
	latest, size := extent(msgs)
	var last int64
	err := tx.QueryRow(ctx, numberSQL, len(msgs), memory.AsStored(latest), threadID, size).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("thread %q: %w", threadID, memory.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("numbering messages: %w", err)
	}
	out := numbered(msgs, last)
	rows := make([][]any, len(out))
	for i, m := range out {
		rows[i] = []any{threadID, m.Seq, m.ID, m.Role, m.Text, string(m.Model), m.Pending, m.RunID, m.CreatedAt}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"messages"}, messageInsertCols, pgx.CopyFromRows(rows)); err != nil {
		return nil, fmt.Errorf("storing messages: %w", err)
	}
	return out, nil
}

// extent is the latest creation time of msgs and the bytes they take.
func extent(msgs []memory.Message) (time.Time, int64) {
	var latest time.Time
	var size int64
	for _, m := range msgs {
		if m.CreatedAt.After(latest) {
			latest = m.CreatedAt
		}
		size += m.Size()
	}
	return latest, size
}

// numbered is msgs numbered up to last, as stored.
func numbered(msgs []memory.Message, last int64) []memory.Message {
	out := make([]memory.Message, len(msgs))
	first := last - int64(len(msgs)) + 1
	for i, m := range msgs {
		m.Seq = first + int64(i)
		m.CreatedAt = memory.AsStored(m.CreatedAt)
		out[i] = m
	}
	return out
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
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Message, error) { return scanMessage(r) })
	if err != nil {
		return nil, fmt.Errorf("reading messages: %w", err)
	}
	return out, nil
}

// scanMessage reads the columns of more, then a message's (messageCols).
func scanMessage(r pgx.Row, more ...any) (memory.Message, error) {
	var m memory.Message
	var model []byte
	if err := r.Scan(append(more, &m.Seq, &m.ID, &m.Role, &m.Text, &model, &m.Pending, &m.RunID, &m.CreatedAt)...); err != nil {
		return m, err
	}
	m.Model = json.RawMessage(model)
	m.CreatedAt = m.CreatedAt.UTC()
	return m, nil
}
