package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/companionhq/companion/internal/memory"
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

// resourceSizeSQL is the number of messages of resource ?1 when it is at
// most memory.SearchExactMessages, or a larger number, reading a bounded
// number of its threads when it is longer: the sum of its first 64
// threads' sizes when it has fewer or they are past the bound already;
// else, over its threads oldest first, the first running sum past the
// bound (the sum of all when none is). Summing every thread cost a search
// of 100,000 messages (some 1,400 threads) a fifth of a millisecond.
var resourceSizeSQL = fmt.Sprintf(`SELECT CASE WHEN count(*) < 64 OR sum(last_seq) > %[1]d THEN coalesce(sum(last_seq), 0)
		ELSE coalesce((SELECT run FROM (SELECT sum(last_seq) OVER (ORDER BY created_at, id ROWS UNBOUNDED PRECEDING) AS run
			FROM threads WHERE resource_id = ?1) WHERE run > %[1]d LIMIT 1), (SELECT sum(last_seq) FROM threads WHERE resource_id = ?1)) END
	FROM (SELECT last_seq FROM threads WHERE resource_id = ?1 LIMIT 64)`, memory.SearchExactMessages)

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

// Search implements memory.Knowledge, as memory's rank.go says, in two
// statements: the rowid from which the resource's SearchRecentMessages
// newest messages start, and how many of those hold each word in their
// text; then one that collects, for each word, the recent messages that
// hold it (and for a rare one the newest SearchOlderMatches older ones),
// each hit weighing its word's weight (times NearWeight in near), sums
// them by message and ranks them. Which thread a message is in is known
// from messages, joined to what was found: the hits are bounded, whatever
// the history.
func (s *Store) Search(ctx context.Context, q memory.SearchQuery) ([]memory.SearchResult, error) {
	terms := memory.SearchTerms(q.Text)
	if len(terms) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	// A history of up to SearchExactMessages messages is ranked whole,
	// by bm25: what a word weighs, how often a message says it, how long
	// the message is. A longer one reads its bounded share.
	var size int64
	if err := s.stResourceSize.QueryRowContext(ctx, q.ResourceID).Scan(&size); err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	if size <= memory.SearchExactMessages {
		return s.searchExact(ctx, q, terms)
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

// Around implements memory.Knowledge: a prepared statement a result (an
// in-process read of a few pages each).
func (s *Store) Around(ctx context.Context, rs []memory.SearchResult, n int) error {
	for i := range rs {
		r := &rs[i]
		msgs, err := scanMessages(s.stAround.QueryContext(ctx, r.ThreadID, r.Message.Seq-int64(n), r.Message.Seq+int64(n)))
		if err != nil {
			return err
		}
		memory.SetAround(r, msgs)
	}
	return nil
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

// matchAny is the FTS5 query for the messages of the resource whose token
// is token that hold any of terms, in their text or near. Each term is
// quoted: SearchTerms made it letters and digits, and quoted it cannot be
// read as an operator (AND, NOT, NEAR) either.
func matchAny(token string, terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + t + `"`
	}
	return `res:"` + token + `" AND {text near}:(` + strings.Join(quoted, " OR ") + `)`
}

// searchExact ranks every message of the resource that holds a word of
// terms by bm25, the message's own text weighing 1 and its neighbours'
// NearWeight.
func (s *Store) searchExact(ctx context.Context, q memory.SearchQuery, terms []string) ([]memory.SearchResult, error) {
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(`SELECT m.thread_id, t.title, -bm25(messages_fts, 0, 1.0, %g) AS score, %s
		FROM messages_fts f JOIN messages m ON m.rowid = f.rowid JOIN threads t ON t.id = m.thread_id
		WHERE messages_fts MATCH ?1 AND (?2 = '' OR m.thread_id = ?2) AND m.thread_id <> ?3
		ORDER BY score DESC, f.rowid DESC LIMIT ?4`, memory.NearWeight, prefixed("m.", messageCols)),
		matchAny(resourceToken(q.ResourceID), terms), q.ThreadID, q.ExcludeThreadID, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	return s.results(ctx, rows, q.Context)
}
