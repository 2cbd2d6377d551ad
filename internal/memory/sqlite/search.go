package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/bm25"
)

// The recall index is messages_fts (migration 0006): a contentless FTS5
// table whose rowid is the message's, with the resource's token (res),
// the message's text and its neighbours' (near). Rowids grow as messages
// are stored: the newest messages of a resource are its highest rowids.

// indexSQL indexes the messages of thread ?2 from seq ?3 to ?4, owned by
// the resource whose token is ?1 (resourceToken): each with the text of
// the messages before and after it as its near. An append indexes its
// messages and the one before them, whose near gains the first of them
// (OR REPLACE: the row it had goes).
const indexSQL = `INSERT OR REPLACE INTO messages_fts (rowid, res, text, near)
	SELECT m.rowid, ?1, m.text,
		coalesce((SELECT p.text FROM messages p WHERE p.thread_id = m.thread_id AND p.seq = m.seq - 1), '') || ' ' ||
		coalesce((SELECT n.text FROM messages n WHERE n.thread_id = m.thread_id AND n.seq = m.seq + 1), '')
	FROM messages m WHERE m.thread_id = ?2 AND m.seq BETWEEN ?3 AND ?4`

// resourceMessagesSQL is the number of messages of resource ?1: the sum
// of its threads' last seqs (a thread's seqs run from 1 without gaps).
const resourceMessagesSQL = `SELECT coalesce(sum(last_seq), 0) FROM threads WHERE resource_id = ?`

// resourceToken is the one token the index's res column holds for the
// messages of resourceID's threads, as migration 0006 computes it: 'r',
// the hex of the id's bytes, '0'. Letters and digits only, so the
// tokenizer keeps it whole; ending in a digit, so that no suffix rule of
// the porter stemmer applies (one could make two resources' tokens one).
func resourceToken(resourceID string) string {
	return "r" + hex.EncodeToString([]byte(resourceID)) + "0"
}

// match is the FTS5 query for the messages of the resource whose token is
// token that hold word in column col ("text", "near", or "" for the
// resource's messages). The word is quoted: SearchTerms made it letters
// and digits, and quoted it cannot be read as an operator (AND, NOT,
// NEAR) either.
func match(token, col, word string) string {
	if col == "" {
		return `res:"` + token + `"`
	}
	return `res:"` + token + `" AND ` + col + `:"` + word + `"`
}

// Search implements memory.Knowledge, as memory's rank.go says: in the
// recall index (searchIndex) when it holds the resource's history; else,
// in the full-text index's bounded share, in two statements: the rowid
// from which the resource's SearchRecentMessages
// newest messages start, and how many of those hold each word in their
// text; then one that collects, for each word, the recent messages that
// hold it (and for a rare one the newest SearchOlderMatches older ones),
// each hit weighing its word's weight (times NearWeight in near), sums
// them by message and ranks them. Which thread a message is in is known
// from messages, joined to what was found: the hits are bounded, whatever
// the history.
func (s *Store) Search(ctx context.Context, q memory.SearchQuery) ([]memory.SearchResult, error) {
	if s.loads.Err() != nil {
		// Closed: the recall index answers no more than the database.
		return nil, fmt.Errorf("searching: %w", errClosed)
	}
	terms := memory.SearchTerms(q.Text)
	if len(terms) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	// A history the recall cache holds is searched in process
	// (searchIndex), as rank.go says. One of up to SearchExactMessages
	// messages is read into it first (a few milliseconds); a longer one
	// the cache can hold is read in the background (a second at 100,000
	// messages), meanwhile searched in the full-text index, its bounded
	// share; one longer than that, always there.
	if x := s.recall.Cached(q.ResourceID); x != nil {
		return s.searchIndex(ctx, q, terms, x)
	}
	var size int64
	if err := s.stResourceMessages.QueryRowContext(ctx, q.ResourceID).Scan(&size); err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	load := func(ctx context.Context) ([]bm25.Doc, error) { return s.history(ctx, q.ResourceID) }
	switch {
	case size <= memory.SearchExactMessages:
		x, err := s.recall.Get(ctx, q.ResourceID, load)
		if err != nil {
			return nil, fmt.Errorf("searching: %w", err)
		}
		return s.searchIndex(ctx, q, terms, x)
	case size <= int64(s.recall.Max()) && !s.recall.Loading(q.ResourceID):
		s.loadMu.Lock()
		if s.loads.Err() == nil { // not closed
			s.loading.Go(func() {
				// A failed load is tried again by a later search.
				_, _ = s.recall.Get(s.loads, q.ResourceID, load)
			})
		}
		s.loadMu.Unlock()
	}
	token := resourceToken(q.ResourceID)
	countStmt, hitStmt, err := s.search.statements(ctx, s.db, len(terms))
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	args := []any{match(token, "", ""), memory.SearchRecentMessages - 1}
	for _, t := range terms {
		args = append(args, match(token, "text", t))
	}
	counts := make([]int, len(terms))
	var recent int64
	rows, err := countStmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	for rows.Next() {
		var i int
		var n int64
		if err := rows.Scan(&i, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("searching: %w", err)
		}
		if i < 0 {
			recent = n
		} else {
			counts[i] = int(n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}

	args = []any{q.ThreadID, q.ExcludeThreadID, q.Limit, recent}
	for i, t := range terms {
		w := memory.SearchWordWeight(counts[i])
		older := 0
		if memory.SearchRare(counts[i]) {
			older = memory.SearchOlderMatches
		}
		args = append(args, w, match(token, "text", t), w*memory.NearWeight, match(token, "near", t), older)
	}
	rows, err = hitStmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	return s.results(ctx, rows, q.Context)
}

// results reads a search's rows (thread, title, score, message) and the
// context messages of each.
func (s *Store) results(ctx context.Context, rows *sql.Rows, context int) ([]memory.SearchResult, error) {
	var out []memory.SearchResult
	for rows.Next() {
		var r memory.SearchResult
		m, err := scanMessage(rows, &r.ThreadID, &r.ThreadTitle, &r.Score)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("searching: %w", err)
		}
		r.Message = m
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	if context > 0 {
		if err := s.Around(ctx, out, context); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Around implements memory.Knowledge: from the recall index of the
// results' resource when it is held, else in one statement for up to
// batchSize results.
func (s *Store) Around(ctx context.Context, rs []memory.SearchResult, n int) error {
	if s.loads.Err() != nil {
		return fmt.Errorf("reading messages: %w", errClosed)
	}
	var rest []memory.SearchResult
	var at []int
	for i := range rs {
		r := &rs[i]
		if x := s.recall.ForThread(r.ThreadID); x != nil {
			if msgs, ok := x.Around(r.ThreadID, r.Message.Seq, n); ok {
				memory.SetAround(r, msgs)
				continue
			}
		}
		rest, at = append(rest, *r), append(at, i)
	}
	if len(rest) == 0 {
		return nil
	}
	if err := s.around(ctx, rest, n); err != nil {
		return err
	}
	for j, i := range at {
		rs[i].Before, rs[i].After = rest[j].Before, rest[j].After
	}
	return nil
}

// around is Around from the database.
func (s *Store) around(ctx context.Context, rs []memory.SearchResult, n int) error {
	for len(rs) > 0 {
		part := rs[:min(len(rs), batchSize)]
		rs = rs[len(part):]
		st, err := s.arounds.statement(ctx, s.db, len(part))
		if err != nil {
			return fmt.Errorf("reading messages: %w", err)
		}
		args := make([]any, 0, 3*len(part))
		for _, r := range part {
			args = append(args, r.ThreadID, r.Message.Seq-int64(n), r.Message.Seq+int64(n))
		}
		rows, err := st.QueryContext(ctx, args...)
		if err != nil {
			return fmt.Errorf("reading messages: %w", err)
		}
		byResult := make([][]memory.Message, len(part))
		for rows.Next() {
			var i int
			m, err := scanSearchMessage(rows, &i)
			if err != nil {
				rows.Close()
				return err
			}
			byResult[i] = append(byResult[i], m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reading messages: %w", err)
		}
		for i := range part {
			memory.SetAround(&part[i], byResult[i])
		}
	}
	return nil
}

// searchMessageCols are the columns of a message that a search shows: all
// but its model messages, which neither recall nor the search route reads.
const searchMessageCols = `seq, id, role, text, pending, run_id, created_at`

// scanSearchMessage reads the columns of more, then a message's
// (searchMessageCols).
func scanSearchMessage(r scanner, more ...any) (memory.Message, error) {
	var m memory.Message
	var created int64
	if err := r.Scan(append(more, &m.Seq, &m.ID, &m.Role, &m.Text, &m.Pending, &m.RunID, &created)...); err != nil {
		return m, fmt.Errorf("reading a message: %w", err)
	}
	m.CreatedAt = time.UnixMicro(created).UTC()
	return m, nil
}

// batchSize is the most ranges of messages one statement of
// aroundStatements reads.
const batchSize = 32

// aroundStatements read several ranges of messages at once, prepared once
// for each number of them: a statement a range cost a recall most of its
// time.
type aroundStatements struct {
	mu    sync.Mutex
	byLen map[int]*sql.Stmt
}

// statement is the one that reads n ranges of messages: it takes each
// one's thread, first and last seq, and returns its index among them and
// its messages (searchMessageCols), in order.
func (as *aroundStatements) statement(ctx context.Context, db *sql.DB, n int) (*sql.Stmt, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if st := as.byLen[n]; st != nil {
		return st, nil
	}
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(` UNION ALL `)
		}
		fmt.Fprintf(&b, `SELECT * FROM (SELECT %d, %s FROM messages WHERE thread_id = ? AND seq BETWEEN ? AND ? ORDER BY seq)`, i, searchMessageCols)
	}
	st, err := db.PrepareContext(ctx, b.String())
	if err != nil {
		return nil, err
	}
	if as.byLen == nil {
		as.byLen = map[int]*sql.Stmt{}
	}
	as.byLen[n] = st
	return st, nil
}

// prefixed is cols (a list of columns) with each column qualified by p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, c := range parts {
		parts[i] = p + c
	}
	return strings.Join(parts, ", ")
}

// searchStatements are Search's two statements for each number of words,
// prepared once: parsing them cost a search a sixth of its time. Their
// LIMIT and OFFSET are expressions (?n + 0), not bare parameters: SQLite
// reads a bare one's value when it plans (to hand it to the virtual
// table, or to size a sort) and so plans the statement again each time
// it is bound, every search, which cost one of 100,000 messages an eighth
// of its time.
type searchStatements struct {
	mu           sync.Mutex
	counts, hits map[int]*sql.Stmt
}

// statements returns the statements of a search of n words. The first
// takes the match of the resource's messages, SearchRecentMessages-1 and
// the match of each word's text, and returns the first rowid of the recent
// messages (-1, rowid) and how many of them hold each word (i, n). The
// second takes the thread to search (or empty), the thread to leave out,
// the limit, that first rowid, then for each word the weight and match of
// its text, the same for its near, and how many older messages to look at
// in each; it returns the results.
func (ss *searchStatements) statements(ctx context.Context, db *sql.DB, n int) (counts, hits *sql.Stmt, err error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.counts == nil {
		ss.counts, ss.hits = map[int]*sql.Stmt{}, map[int]*sql.Stmt{}
	}
	if ss.counts[n] != nil {
		return ss.counts[n], ss.hits[n], nil
	}
	var c, h strings.Builder
	c.WriteString(`WITH recent (r) AS (SELECT coalesce((SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2 + 0), 0))
		SELECT -1, r FROM recent`)
	for i := range n {
		fmt.Fprintf(&c, ` UNION ALL SELECT %d, (SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?%d AND rowid >= (SELECT r FROM recent))`, i, i+3)
		for col := range 2 {
			if i+col > 0 {
				h.WriteString(` UNION ALL `)
			}
			w, m, older := 5+5*i+2*col, 6+5*i+2*col, 9+5*i
			// The recent messages, then the older ones, newest first.
			fmt.Fprintf(&h, `SELECT rowid, ?%d AS w FROM messages_fts WHERE messages_fts MATCH ?%d AND rowid >= ?4
				UNION ALL SELECT * FROM (SELECT rowid, ?%d FROM messages_fts WHERE messages_fts MATCH ?%d AND rowid < ?4 ORDER BY rowid DESC LIMIT ?%d + 0)`,
				w, m, w, m, older)
		}
	}
	if ss.counts[n], err = db.PrepareContext(ctx, c.String()); err != nil {
		return nil, nil, err
	}
	if ss.hits[n], err = db.PrepareContext(ctx, `SELECT f.thread_id, t.title, f.score, `+prefixed("m.", messageCols)+`
		FROM (SELECT m.rowid, m.thread_id, h.score FROM (SELECT rowid, sum(w) AS score FROM (`+h.String()+`) GROUP BY rowid) h
			JOIN messages m ON m.rowid = h.rowid
			WHERE (?1 = '' OR m.thread_id = ?1) AND m.thread_id <> ?2
			ORDER BY h.score DESC, h.rowid DESC LIMIT ?3 + 0) f
		JOIN messages m ON m.rowid = f.rowid JOIN threads t ON t.id = f.thread_id
		ORDER BY f.score DESC, f.rowid DESC`); err != nil {
		ss.counts[n].Close()
		delete(ss.counts, n)
		return nil, nil, err
	}
	return ss.counts[n], ss.hits[n], nil
}

// historySQL reads every message of resource ?1 for its recall index, in
// no order (the index needs none, and sorting them cost a third of the
// read).
const historySQL = `SELECT m.rowid, m.thread_id, t.title, m.seq, m.id, m.role, m.text, m.created_at
	FROM threads t JOIN messages m ON m.thread_id = t.id
	WHERE t.resource_id = ?`

// history is every message of resourceID as its recall index takes them:
// what a search shows of them (not their runs).
func (s *Store) history(ctx context.Context, resourceID string) ([]bm25.Doc, error) {
	// Every write up to this version committed before the read begins.
	v := s.committedVersion.Load()
	rows, err := s.stHistory.QueryContext(ctx, resourceID)
	if err != nil {
		return nil, fmt.Errorf("reading the history: %w", err)
	}
	defer rows.Close()
	var docs []bm25.Doc
	// A history's messages share a few threads and two roles: each string
	// is made once (the driver's bytes are read in place).
	interned := map[string]string{}
	intern := func(b sql.RawBytes) string {
		if v, ok := interned[string(b)]; ok {
			return v
		}
		v := string(b)
		interned[v] = v
		return v
	}
	var thread, title, role sql.RawBytes
	for rows.Next() {
		d := bm25.Doc{Version: v}
		var created int64
		m := &d.Message
		if err := rows.Scan(&d.Row, &thread, &title, &m.Seq, &m.ID, &role, &m.Text, &created); err != nil {
			return nil, fmt.Errorf("reading the history: %w", err)
		}
		d.ThreadID, d.ThreadTitle, m.Role = intern(thread), intern(title), intern(role)
		m.CreatedAt = time.UnixMicro(created).UTC()
		docs = append(docs, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the history: %w", err)
	}
	return docs, nil
}

// searchIndex ranks the resource's history by its recall index, which
// holds what a search shows of each message and its thread's title.
func (s *Store) searchIndex(ctx context.Context, q memory.SearchQuery, terms []string, x *bm25.Index) ([]memory.SearchResult, error) {
	hits := x.Search(bm25.Query{Words: terms, ThreadID: q.ThreadID, ExcludeThreadID: q.ExcludeThreadID,
		Limit: q.Limit, NearWeight: memory.NearWeight})
	out := make([]memory.SearchResult, len(hits))
	for i, h := range hits {
		out[i] = memory.SearchResult{ThreadID: h.ThreadID, ThreadTitle: h.ThreadTitle, Message: h.Message, Score: h.Score}
	}
	if q.Context > 0 && len(out) > 0 {
		if err := s.Around(ctx, out, q.Context); err != nil {
			return nil, err
		}
	}
	return out, nil
}
