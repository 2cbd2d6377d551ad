// Package sqlite is the conversation store on SQLite (modernc.org/sqlite,
// pure Go): one file, write-ahead logging, a busy timeout, foreign keys.
//
// SQLite serves one process: turns on a thread are serialized by an
// in-process lock, so two service processes must not share one file (use
// PostgreSQL to run several).
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/bm25"
	"github.com/companionhq/companion/internal/memory/locks"
	"github.com/companionhq/companion/internal/memory/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// BusyTimeout is how long a statement waits for another connection's write.
const BusyTimeout = 10 * time.Second

// Store is a memory.Store on one SQLite file.
type Store struct {
	db    *sql.DB
	locks locks.Set
	// latest is the schema version this build migrates to, for Ping.
	latest int
	// health remembers the last write that failed for want of a writable
	// database, for Ping.
	health memory.WriteHealth
	// probing is Ping's write under way, if any (probeWrite).
	pmu     sync.Mutex
	probing *probe
	// The statements of a turn, prepared once: SQLite would parse each
	// again on every use.
	stThread, stThreadSeq, stInsertThread, stTail, stKnown, stNumber, stInsertMessage, stIndex, stAnswer, stUsage, stThreadUsage, stTokens *sql.Stmt
	// Search's statements (search.go) of a search of n words, prepared on
	// first use.
	// stResourceMessages tells Search whether the recall cache can hold a
	// resource's history (resourceMessagesSQL); stHistory reads it whole
	// for its recall index.
	stResourceMessages, stHistory *sql.Stmt
	// The statements that read the messages around a search's results
	// (search.go).
	arounds aroundStatements
	// recall holds the recall indexes of the resources searched lately
	// (search.go), told of every message stored and deleted, and every
	// title set, once committed. A write that stores messages or sets a
	// title takes the next version as it runs (the writes run one at a
	// time, in the order they commit in); committedVersion is the highest
	// of those committed, so that a history read after it holds every
	// write of a version up to it.
	recall                    *bm25.Cache
	version, committedVersion atomic.Uint64
	// loading counts the recall indexes of long histories being read in
	// the background (search.go), for Close; loads is their context,
	// cancelled at Close.
	loadMu      sync.Mutex
	loading     sync.WaitGroup
	loads       context.Context
	cancelLoads context.CancelFunc
	// SearchVectors's statements (vectors.go).
	stVectors, stVectorHit *sql.Stmt
	search                 searchStatements
	// stWorkingMemory reads the current version of a working memory, and
	// stResourceSettings a resource's settings, which every turn does
	// (knowledge.go, settings.go).
	stWorkingMemory, stResourceSettings *sql.Stmt
	// The writer's savepoints (writer.go), one at a time, under one name.
	stSavepoint, stRelease, stRollbackTo *sql.Stmt
	// The writes commit in groups, led by one of their writers
	// (writer.go): queue, leading and closed are under wmu; inflight
	// counts the writes queued and not yet returned, for Close.
	wmu      sync.Mutex
	queue    []*write
	leading  bool
	closed   bool
	inflight sync.WaitGroup
	// A commit signals committed, for the checkpointer (writer.go), which
	// stops at closing.
	closing          chan struct{}
	committed        chan struct{}
	checkpointerDone chan struct{}
	// The write-ahead log is started over when it passes its limit
	// (writer.go): the checkpointer sets restart, the next commit's
	// leader tries and says on restarted whether it could.
	log       logOptions
	frameSize int64
	restart   atomic.Bool
	restarted chan bool
}

// logOptions are the write-ahead log's limit in bytes and the least time
// between two background checkpoints (LogLimit and checkpointEvery;
// tests make them smaller).
type logOptions struct {
	limit int64
	every time.Duration
}

// MmapSize is how much of the database file is read through a memory map
// (the rest through read calls): address space, not memory; the system's
// page cache holds what is read.
const MmapSize = 1 << 30

// MaxConns bounds the connections to the file: requests beyond it wait for
// one (each holds a file descriptor, and SQLite writes one at a time).
const MaxConns = 8

var _ memory.Store = (*Store)(nil)

// Open opens (creating it and its directory when missing) the database file
// at path and brings its schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, logOptions{limit: LogLimit, every: checkpointEvery})
}

func open(ctx context.Context, path string, lo logOptions) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: no database file given")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqlite: creating the database directory: %w", err)
		}
	}
	// Every connection gets the pragmas; write transactions take the write
	// lock at BEGIN, so they wait on the busy timeout instead of failing
	// when they would upgrade a read.
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	// NORMAL in WAL mode survives a crash of the process (kill -9); only a
	// power loss can lose the last commits.
	q.Add("_pragma", "synchronous(NORMAL)")
	// The group writer's savepoints keep the pages they change in a
	// sub-journal, a temporary file by default: in memory, it costs no
	// write calls (they were a twentieth of the CPU of a turn).
	q.Add("_pragma", "temp_store(MEMORY)")
	// Checkpoints run in the background, not in the commits that take the
	// write-ahead log past a size (runCheckpointer).
	q.Add("_pragma", "wal_autocheckpoint(0)")
	// A commit after the log was started over cuts its file back to the
	// limit (restartLog).
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", lo.limit))
	// Reads of the database file go through a memory map, shared by the
	// connections, instead of a read call a page into each connection's own
	// small cache: recall reads a user's old messages, a few pages each
	// seldom read, and those calls were most of its cost.
	q.Add("_pragma", fmt.Sprintf("mmap_size(%d)", MmapSize))
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(MaxConns)
	// Idle connections keep their prepared statements.
	db.SetMaxIdleConns(MaxConns)
	s := &Store{db: db, log: lo, recall: bm25.NewCache(0)}
	s.loads, s.cancelLoads = context.WithCancel(context.Background())
	if err := s.migrateRetrying(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: migrating %s: %w", path, err)
	}
	if err := s.prepare(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: preparing statements: %w", err)
	}
	var page int64
	if err := db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&page); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: reading the page size: %w", err)
	}
	s.frameSize = page + walFrameHeader
	s.closing, s.committed, s.checkpointerDone = make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	s.restarted = make(chan bool, 1)
	go s.runCheckpointer()
	return s, nil
}

func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		into **sql.Stmt
		q    string
	}{
		{&s.stThread, `SELECT ` + threadCols + ` FROM threads WHERE id = ?`},
		{&s.stThreadSeq, `SELECT ` + threadCols + `, last_seq FROM threads WHERE id = ?`},
		{&s.stInsertThread, `INSERT INTO threads (id, resource_id, title, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{&s.stTail, `SELECT ` + messageCols + ` FROM messages WHERE thread_id = ? ORDER BY seq DESC LIMIT ?`},
		{&s.stKnown, knownSQL},
		{&s.stNumber, `UPDATE threads SET last_seq = last_seq + ?, updated_at = max(updated_at, ?), bytes = bytes + ? WHERE id = ? RETURNING last_seq, resource_id, title`},
		{&s.stInsertMessage, `INSERT INTO messages (thread_id, seq, id, role, text, model, pending, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.stIndex, indexSQL},
		{&s.stAnswer, `UPDATE messages SET pending = 0 WHERE thread_id = ? AND pending = 1 RETURNING ` + messageCols},
		{&s.stUsage, `INSERT INTO usage (resource_id, day, tokens, cost) VALUES (?, ?, ?, ?)
			ON CONFLICT (resource_id, day) DO UPDATE SET tokens = tokens + excluded.tokens, cost = cost + excluded.cost`},
		{&s.stThreadUsage, `INSERT INTO thread_usage (resource_id, day, thread_id, tokens, cost) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (resource_id, day, thread_id) DO UPDATE SET tokens = tokens + excluded.tokens, cost = cost + excluded.cost`},
		{&s.stTokens, `SELECT tokens, cost FROM usage WHERE resource_id = ? AND day = ?`},
		{&s.stResourceMessages, resourceMessagesSQL},
		{&s.stHistory, historySQL},
		{&s.stVectors, vectorsSQL},
		{&s.stVectorHit, vectorHitSQL},
		{&s.stWorkingMemory, currentWorkingMemorySQL},
		{&s.stResourceSettings, resourceSettingsSQL},
		{&s.stSavepoint, `SAVEPOINT w`},
		{&s.stRelease, `RELEASE w`},
		{&s.stRollbackTo, `ROLLBACK TO w`},
	} {
		st, err := s.db.PrepareContext(ctx, p.q)
		if err != nil {
			return err
		}
		*p.into = st
	}
	return nil
}

// migrateRetrying runs migrate again while the file is busy. Processes
// opening a fresh file together race to switch it to write-ahead logging,
// and SQLite answers some of those races with SQLITE_BUSY at once instead of
// waiting on the busy timeout (it would deadlock otherwise).
func (s *Store) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(BusyTimeout)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := s.migrate(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (waiting for a busy file: %w)", err, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// writeErr is err as a *memory.WriteError when SQLite says the database
// cannot be written, else err.
func writeErr(err error) error {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return err
	}
	var reason string
	switch coded.Code() & 0xff {
	case 13: // SQLITE_FULL
		reason = "the disk is full"
	case 8: // SQLITE_READONLY
		reason = "the database is read-only"
	case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED: after the busy timeout
		reason = "the database is locked by another process"
	case 10, 14: // SQLITE_IOERR, SQLITE_CANTOPEN
		reason = "the database file cannot be written"
	default:
		return err
	}
	return &memory.WriteError{Reason: reason, Err: err}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (or one of its
// extended codes).
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}

// migrate applies the migrations the file lacks, in one write transaction:
// processes starting together on one file take turns.
func (s *Store) migrate(ctx context.Context) error {
	all, err := migrate.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	s.latest = len(all)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return err
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return err
	}
	if current > len(all) {
		return migrate.Newer(current, len(all))
	}
	for _, m := range all[current:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UnixMicro()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// SchemaVersion is the version of the file's schema.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// Close implements memory.Store: it refuses new writes, waits for those
// queued to commit and for the checkpointer, then closes the file.
func (s *Store) Close() error {
	if s.cancelLoads != nil {
		s.loadMu.Lock()
		s.cancelLoads()
		s.loadMu.Unlock()
		s.loading.Wait()
		s.recall.Clear()
	}
	if s.closing != nil {
		s.wmu.Lock()
		first := !s.closed
		s.closed = true
		s.wmu.Unlock()
		s.inflight.Wait()
		if first {
			close(s.closing)
		}
		<-s.checkpointerDone
	}
	return s.db.Close()
}

// Ping implements memory.Store: the schema is at this build's version, and
// every table answers a query of the columns the store reads.
func (s *Store) Ping(ctx context.Context) error {
	if err := migrate.Current(ctx, s.latest, s.SchemaVersion); err != nil {
		return err
	}
	for _, q := range []string{
		`SELECT ` + threadCols + `, last_seq FROM threads LIMIT 1`,
		`SELECT thread_id, ` + messageCols + ` FROM messages LIMIT 1`,
		`SELECT resource_id, day, tokens, cost FROM usage LIMIT 1`,
		`SELECT resource_id, day, thread_id, tokens, cost FROM thread_usage LIMIT 1`,
		`SELECT day, locale, count FROM crisis_referrals LIMIT 1`,
		`SELECT resource_id, minor, updated_at FROM resource_settings LIMIT 1`,
		`SELECT ` + workingMemoryCols + ` FROM working_memory LIMIT 1`,
		`SELECT rowid FROM messages_fts WHERE messages_fts MATCH '{res text near}: ping' LIMIT 1`,
	} {
		rows, err := s.db.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("checking the schema: %w", err)
		}
		rows.Close()
	}
	// A write of its own, in the commit of the writes of turns: a store
	// that cannot write is not ready, though it still reads.
	if err := s.probeWrite(ctx); err != nil {
		return err
	}
	return s.health.Err()
}

// probe is Ping's write under way: one at a time, however many checks
// wait for it.
type probe struct {
	done chan struct{}
	err  error
}

// probeWrite writes Ping's row and returns the outcome, or a WriteError
// when ctx ends first (a lock held elsewhere makes a write wait up to
// BusyTimeout); the write then goes on, and later checks wait for it.
func (s *Store) probeWrite(ctx context.Context) error {
	s.pmu.Lock()
	p := s.probing
	if p == nil {
		p = &probe{done: make(chan struct{})}
		s.probing = p
		go func() {
			p.err = s.queueWrite(&write{ctx: context.Background(), probe: true, done: make(chan error, 1), fn: func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO ready_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at`, time.Now().UnixMicro())
				return err
			}})
			s.pmu.Lock()
			s.probing = nil
			s.pmu.Unlock()
			close(p.done)
		}()
	}
	s.pmu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return &memory.WriteError{Reason: "the database did not take a write in time", Err: ctx.Err()}
	}
}

// Used implements memory.Store.
func (s *Store) Used(ctx context.Context, resourceID, day string) (int64, float64, error) {
	var n int64
	var cost float64
	err := s.stTokens.QueryRowContext(ctx, resourceID, day).Scan(&n, &cost)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("reading usage: %w", err)
	}
	return n, cost, nil
}

// UsageBetween implements memory.Store.
func (s *Store) UsageBetween(ctx context.Context, resourceID, from, to string) ([]memory.DayUsage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT u.day, u.tokens, u.cost, t.thread_id, t.tokens, t.cost
		FROM usage u LEFT JOIN thread_usage t ON t.resource_id = u.resource_id AND t.day = u.day
		WHERE u.resource_id = ? AND u.day BETWEEN ? AND ?
		ORDER BY u.day, t.tokens DESC, t.thread_id`, resourceID, from, to)
	if err != nil {
		return nil, fmt.Errorf("reading usage: %w", err)
	}
	defer rows.Close()
	var out []memory.DayUsage
	for rows.Next() {
		var d memory.DayUsage
		var thread sql.NullString
		var tt sql.NullInt64
		var tc sql.NullFloat64
		if err := rows.Scan(&d.Day, &d.Tokens, &d.Cost, &thread, &tt, &tc); err != nil {
			return nil, fmt.Errorf("reading usage: %w", err)
		}
		var share *memory.ThreadUsage
		if thread.Valid {
			share = &memory.ThreadUsage{ThreadID: thread.String, Tokens: tt.Int64, Cost: tc.Float64}
		}
		out = memory.AddDayUsage(out, d, share)
	}
	return out, rows.Err()
}

// AddUsage implements memory.Store.
func (s *Store) AddUsage(ctx context.Context, u memory.Usage) error {
	if !u.Counts() {
		return nil
	}
	return s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error { return s.addUsage(ctx, tx, u) })
}

func (s *Store) addUsage(ctx context.Context, tx *sql.Tx, u memory.Usage) error {
	if _, err := tx.StmtContext(ctx, s.stUsage).ExecContext(ctx, u.ResourceID, u.Day, u.Tokens, u.Cost); err != nil {
		return fmt.Errorf("counting usage: %w", err)
	}
	if _, err := tx.StmtContext(ctx, s.stThreadUsage).ExecContext(ctx, u.ResourceID, u.Day, u.ThreadID, u.Tokens, u.Cost); err != nil {
		return fmt.Errorf("counting usage: %w", err)
	}
	return nil
}

const threadCols = `id, resource_id, title, metadata, created_at, updated_at, bytes`

// knownSQL finds which of the ids (a JSON array) a thread holds, each in
// the (thread_id, id) index (TestKnownLooksIdsUp).
const knownSQL = `SELECT id FROM messages WHERE thread_id = ? AND id IN (SELECT value FROM json_each(?))`

// Thread implements memory.Store.
func (s *Store) Thread(ctx context.Context, id string) (memory.Thread, error) {
	return scanThread(s.stThread.QueryRowContext(ctx, id))
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
	rows, err := s.db.QueryContext(ctx, `SELECT `+threadCols+` FROM threads WHERE resource_id = ?
		ORDER BY `+col+` `+dir+`, id `+dir+` LIMIT ? OFFSET ?`, resourceID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("listing threads: %w", err)
	}
	defer rows.Close()
	var out []memory.Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("listing threads: %w", err)
	}
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM threads WHERE resource_id = ?`, resourceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("counting threads: %w", err)
	}
	return out, total, nil
}

// UpdateThread implements memory.Store.
func (s *Store) UpdateThread(ctx context.Context, id, resourceID string, title *string, metadata json.RawMessage, now time.Time) (memory.Thread, error) {
	var meta any
	if metadata != nil {
		meta = string(metadata)
	}
	var th memory.Thread
	var v uint64
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		th, err = scanThread(tx.QueryRowContext(ctx, `UPDATE threads SET title = coalesce(?, title), metadata = coalesce(?, metadata), updated_at = ?
			WHERE id = ? AND resource_id = ? RETURNING `+threadCols, title, meta, memory.AsStored(now).UnixMicro(), id, resourceID))
		v = s.version.Add(1)
		return err
	})
	if err != nil {
		return th, err
	}
	s.recall.Retitled(id, th.Title, v)
	return th, nil
}

const messageCols = `seq, id, role, text, model, pending, run_id, created_at`

// Messages implements memory.Store. Seq runs 1..last_seq without gaps, so a
// page is a range of the primary key, however deep.
func (s *Store) Messages(ctx context.Context, threadID string, offset, limit int) ([]memory.Message, int, error) {
	var total int
	err := s.db.QueryRowContext(ctx, `SELECT last_seq FROM threads WHERE id = ?`, threadID).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("thread %q: %w", threadID, memory.ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("counting messages: %w", err)
	}
	msgs, err := queryMessages(ctx, s.db, `SELECT `+messageCols+` FROM messages WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?`, threadID, offset, limit)
	return msgs, total, err
}

// Lock implements memory.Store with an in-process lock: SQLite serves one
// process.
func (s *Store) Lock(ctx context.Context, threadID string, wait time.Duration) (memory.Turn, error) {
	release, err := s.locks.Acquire(ctx, threadID, wait)
	if errors.Is(err, locks.ErrTimeout) {
		return nil, fmt.Errorf("thread %q: %w", threadID, memory.ErrBusy)
	}
	if err != nil {
		return nil, err
	}
	return &turn{s: s, id: threadID, release: release}, nil
}

// turn is a memory.Turn on the shared pool: the in-process lock is what
// keeps other turns of the thread out.
type turn struct {
	s       *Store
	id      string
	release func()
}

func (t *turn) Unlock() { t.release() }

func (t *turn) Open(ctx context.Context, th memory.Thread) (memory.Thread, error) {
	meta := th.Metadata
	if meta == nil {
		meta = json.RawMessage(`{}`)
	}
	// Through the group commits, as every write.
	if err := t.s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := t.insertThread(ctx, tx, th, meta)
		return err
	}); err != nil {
		return memory.Thread{}, err
	}
	return t.Thread(ctx)
}

func (t *turn) Thread(ctx context.Context) (memory.Thread, error) { return t.s.Thread(ctx, t.id) }

// knownIDs returns which of ids thread threadID's messages have, with st
// (stKnown, on the store or in a transaction).
func knownIDs(ctx context.Context, st *sql.Stmt, threadID string, ids []string) (map[string]bool, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, threadID, string(list))
	if err != nil {
		return nil, fmt.Errorf("looking up message ids: %w", err)
	}
	defer rows.Close()
	known := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		known[id] = true
	}
	return known, rows.Err()
}

// errChanged is a thread that changed between a turn's reads and its write.
var errChanged = errors.New("the thread changed while the turn read it")

// Begin reads first, outside the commits, and queues only the writes: one
// group commits at a time for the whole store, so what a commit does for a
// turn bounds how many turns a second the store takes. The turn holds
// the thread, so nothing else in this process writes to it between the
// reads and the write; the write checks that (the thread's last message
// and owner are those read) and, when another process changed the file
// meanwhile, Begin does it all again inside one transaction.
func (t *turn) Begin(ctx context.Context, th memory.Thread, n int, ids []string, plan memory.Plan) (memory.Thread, []memory.Message, error) {
	meta := th.Metadata
	if meta == nil {
		meta = json.RawMessage(`{}`)
	}
	// The reads are short (the tail is one range of the key, whatever the
	// thread's length), and a cancellable context would cost a goroutine a
	// statement, twice (database/sql's and the driver's, each waiting to
	// interrupt it): they run to their end, and the context is checked
	// after them.
	rctx := context.WithoutCancel(ctx)
	var lastSeq int64
	cur, err := scanThreadSeq(t.s.stThreadSeq.QueryRowContext(rctx, t.id), &lastSeq)
	exists := err == nil
	switch {
	case errors.Is(err, memory.ErrNotFound):
		// As the insert below stores it.
		cur = th
		cur.Metadata = meta
		cur.CreatedAt, cur.UpdatedAt = memory.AsStored(th.CreatedAt), memory.AsStored(th.UpdatedAt)
		cur.Bytes = 0
	case err != nil:
		return th, nil, err
	}
	var tail []memory.Message
	known := map[string]bool{}
	if exists {
		if tail, known, err = t.reads(rctx, asIs, n, ids); err != nil {
			return cur, nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return cur, nil, err
	}
	msgs, err := plan(cur, tail, known)
	if err != nil {
		return cur, nil, err
	}
	if exists && len(msgs) == 0 {
		return cur, nil, nil
	}
	var a appended
	err = t.s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		a = appended{}
		if !exists {
			res, err := t.insertThread(ctx, tx, th, meta)
			if err != nil {
				return err
			}
			if k, err := res.RowsAffected(); err != nil || k != 1 {
				return errChanged // created meanwhile, by another process
			}
		}
		if len(msgs) == 0 {
			return nil
		}
		var err error
		a, err = t.s.appendTx(ctx, tx, t.id, msgs)
		switch {
		case errors.Is(err, memory.ErrNotFound):
			return errChanged // deleted meanwhile, by another process
		case err != nil:
			return err
		case a.msgs[0].Seq-1 != lastSeq, a.owner != cur.ResourceID:
			return errChanged // appended to, or deleted and created again, by another process
		}
		return nil
	})
	if errors.Is(err, errChanged) {
		return t.beginInOne(ctx, th, meta, n, ids, plan)
	}
	if err != nil {
		return cur, nil, err
	}
	t.s.indexed(a)
	return cur, a.msgs, nil
}

// asIs gives reads the store's statements as they are, outside a
// transaction.
func asIs(st *sql.Stmt) *sql.Stmt { return st }

// reads is what a turn reads for its plan: the thread's last n messages
// (oldest first) and which of ids it holds, with the store's statements as
// st gives them (as they are, or in a transaction).
func (t *turn) reads(ctx context.Context, st func(*sql.Stmt) *sql.Stmt, n int, ids []string) ([]memory.Message, map[string]bool, error) {
	var tail []memory.Message
	if n > 0 {
		var err error
		if tail, err = scanMessages(st(t.s.stTail).QueryContext(ctx, t.id, n)); err != nil {
			return nil, nil, err
		}
		slices.Reverse(tail)
	}
	known := map[string]bool{}
	if len(ids) > 0 {
		var err error
		if known, err = knownIDs(ctx, st(t.s.stKnown), t.id, ids); err != nil {
			return nil, nil, err
		}
	}
	return tail, known, nil
}

// insertThread creates the turn's thread as th (metadata meta) unless it
// exists.
func (t *turn) insertThread(ctx context.Context, tx *sql.Tx, th memory.Thread, meta json.RawMessage) (sql.Result, error) {
	res, err := tx.StmtContext(ctx, t.s.stInsertThread).ExecContext(ctx, t.id, th.ResourceID, th.Title, string(meta),
		memory.AsStored(th.CreatedAt).UnixMicro(), memory.AsStored(th.UpdatedAt).UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("creating thread %q: %w", t.id, err)
	}
	return res, nil
}

// beginInOne is Begin in one write's transaction: reads and writes.
func (t *turn) beginInOne(ctx context.Context, th memory.Thread, meta json.RawMessage, n int, ids []string, plan memory.Plan) (memory.Thread, []memory.Message, error) {
	cur := th
	var a appended
	err := t.s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		a = appended{}
		if _, err := t.insertThread(ctx, tx, th, meta); err != nil {
			return err
		}
		var err error
		if cur, err = scanThread(tx.StmtContext(ctx, t.s.stThread).QueryRowContext(ctx, t.id)); err != nil {
			return err
		}
		tail, known, err := t.reads(ctx, func(st *sql.Stmt) *sql.Stmt { return tx.StmtContext(ctx, st) }, n, ids)
		if err != nil {
			return err
		}
		msgs, err := plan(cur, tail, known)
		if err != nil || len(msgs) == 0 {
			return err
		}
		a, err = t.s.appendTx(ctx, tx, t.id, msgs)
		return err
	})
	if err != nil {
		return cur, nil, err
	}
	t.s.indexed(a)
	return cur, a.msgs, nil
}

func (t *turn) Tail(ctx context.Context, n int) ([]memory.Message, error) {
	tail, _, err := t.reads(ctx, asIs, n, nil)
	return tail, err
}

func (t *turn) Known(ctx context.Context, ids []string) (map[string]bool, error) {
	_, known, err := t.reads(ctx, asIs, 0, ids)
	return known, err
}

func (t *turn) Append(ctx context.Context, msgs []memory.Message) ([]memory.Message, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	var a appended
	err := t.s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		a, err = t.s.appendTx(ctx, tx, t.id, msgs)
		return err
	})
	if err != nil {
		return nil, err
	}
	t.s.indexed(a)
	return a.msgs, nil
}

func (t *turn) Answer(ctx context.Context, reply memory.Message, u memory.Usage) ([]memory.Message, memory.Message, error) {
	var answered []memory.Message
	var stored appended
	err := t.s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		answered, err = scanMessages(tx.StmtContext(ctx, t.s.stAnswer).QueryContext(ctx, t.id))
		if err != nil {
			return fmt.Errorf("marking messages answered: %w", err)
		}
		if stored, err = t.s.appendTx(ctx, tx, t.id, []memory.Message{reply}); err != nil {
			return err
		}
		if u.Counts() {
			return t.s.addUsage(ctx, tx, u)
		}
		return nil
	})
	if err != nil {
		return nil, memory.Message{}, fmt.Errorf("storing the reply: %w", err)
	}
	t.s.indexed(stored)
	slices.SortFunc(answered, func(a, b memory.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	return answered, stored.msgs[0], nil
}

func (t *turn) Delete(ctx context.Context) error {
	var owner string
	err := t.s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		owner = ""
		switch err := tx.QueryRowContext(ctx, `SELECT resource_id FROM threads WHERE id = ?`, t.id).Scan(&owner); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM working_memory WHERE scope = ? AND key = ?`, memory.ScopeThread, t.id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages_fts WHERE rowid IN (SELECT rowid FROM messages WHERE thread_id = ?)`, t.id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE id = ?`, t.id)
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting thread %q: %w", t.id, err)
	}
	t.s.recall.Dropped(owner)
	return nil
}

// appended is what appendTx stored: the messages as stored, the thread's
// owner, and the messages as the recall cache takes them once committed
// (s.recall.Added).
type appended struct {
	msgs  []memory.Message
	owner string
	docs  []bm25.Doc
}

// indexed tells the recall cache of what the writes a were committed.
func (s *Store) indexed(as ...appended) {
	for _, a := range as {
		s.recall.Added(a.owner, a.docs)
	}
}

// appendTx numbers msgs after the thread's last message, inserts them and
// indexes them for search (indexSQL); it returns them as stored, and the
// thread's owner.
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, threadID string, msgs []memory.Message) (appended, error) {
	var latest, size int64
	for _, m := range msgs {
		latest = max(latest, memory.AsStored(m.CreatedAt).UnixMicro())
		size += m.Size()
	}
	var last int64
	var owner, title string
	err := tx.StmtContext(ctx, s.stNumber).QueryRowContext(ctx, len(msgs), latest, size, threadID).Scan(&last, &owner, &title)
	if errors.Is(err, sql.ErrNoRows) {
		return appended{}, fmt.Errorf("thread %q: %w", threadID, memory.ErrNotFound)
	}
	if err != nil {
		return appended{}, fmt.Errorf("numbering messages: %w", err)
	}
	stmt := tx.StmtContext(ctx, s.stInsertMessage)
	a := appended{msgs: make([]memory.Message, len(msgs)), owner: owner, docs: make([]bm25.Doc, len(msgs))}
	v := s.version.Add(1)
	first := last - int64(len(msgs)) + 1
	for i, m := range msgs {
		m.Seq = first + int64(i)
		m.CreatedAt = memory.AsStored(m.CreatedAt)
		res, err := stmt.ExecContext(ctx, threadID, m.Seq, m.ID, m.Role, m.Text, string(m.Model), m.Pending, m.RunID, m.CreatedAt.UnixMicro())
		if err != nil {
			return appended{}, fmt.Errorf("storing message %q: %w", m.ID, err)
		}
		row, err := res.LastInsertId()
		if err != nil {
			return appended{}, fmt.Errorf("storing message %q: %w", m.ID, err)
		}
		a.msgs[i] = m
		a.docs[i] = bm25.Doc{Row: row, ThreadID: threadID, Message: m, ThreadTitle: title, Version: v}
	}
	if _, err := tx.StmtContext(ctx, s.stIndex).ExecContext(ctx, resourceToken(owner), threadID, first-1, last); err != nil {
		return appended{}, fmt.Errorf("indexing messages: %w", err)
	}
	return a, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanThread(r scanner) (memory.Thread, error) { return scanThreadSeq(r) }

// scanThreadSeq reads a thread's columns, then those of more (its last
// seq).
func scanThreadSeq(r scanner, more ...any) (memory.Thread, error) {
	var t memory.Thread
	var meta string
	var created, updated int64
	err := r.Scan(append([]any{&t.ID, &t.ResourceID, &t.Title, &meta, &created, &updated, &t.Bytes}, more...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return t, memory.ErrNotFound
	}
	if err != nil {
		return t, fmt.Errorf("reading a thread: %w", err)
	}
	t.Metadata = json.RawMessage(meta)
	t.CreatedAt, t.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return t, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryMessages(ctx context.Context, q querier, query string, args ...any) ([]memory.Message, error) {
	return scanMessages(q.QueryContext(ctx, query, args...))
}

// scanMessages reads the messages of a query's rows.
func scanMessages(rows *sql.Rows, err error) ([]memory.Message, error) {
	if err != nil {
		return nil, fmt.Errorf("reading messages: %w", err)
	}
	defer rows.Close()
	var out []memory.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading messages: %w", err)
	}
	return out, nil
}

// scanMessage reads the columns of more, then a message's (messageCols).
func scanMessage(r scanner, more ...any) (memory.Message, error) {
	var m memory.Message
	var model string
	var created int64
	if err := r.Scan(append(more, &m.Seq, &m.ID, &m.Role, &m.Text, &model, &m.Pending, &m.RunID, &created)...); err != nil {
		return m, fmt.Errorf("reading a message: %w", err)
	}
	m.Model = json.RawMessage(model)
	m.CreatedAt = time.UnixMicro(created).UTC()
	return m, nil
}
