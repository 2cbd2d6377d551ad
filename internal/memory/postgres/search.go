package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/companionhq/companion/internal/memory"
)

// The recall index is message_search (migration 0009): a row a message,
// its doc the function search_doc of the resource, the message's text and
// its neighbours' (near).

// indexSQL indexes the last $2 messages of thread $1 and the one before
// them, whose near gains the first of them: each with the text of the
// messages before and after it as its near. It follows the inserts of an
// append in its transaction (after numberSQL, so the thread's last_seq is
// the last of them).
const indexSQL = `INSERT INTO message_search (thread_id, seq, resource_id, doc)
	SELECT m.thread_id, m.seq, t.resource_id, search_doc(t.resource_id, m.text, coalesce(p.text, '') || ' ' || coalesce(n.text, ''))
	FROM threads t
	JOIN messages m ON m.thread_id = t.id AND m.seq BETWEEN t.last_seq - $2 AND t.last_seq
	LEFT JOIN messages p ON p.thread_id = m.thread_id AND p.seq = m.seq - 1
	LEFT JOIN messages n ON n.thread_id = m.thread_id AND n.seq = m.seq + 1
	WHERE t.id = $1
	ORDER BY m.seq
	ON CONFLICT (thread_id, seq) DO UPDATE SET doc = excluded.doc`

// resourceLexeme is the lexeme that search_doc adds to the doc of every
// message of resourceID's threads: 'r', the hex of the id's bytes, '0'.
// As a tsquery it matches that resource's messages and no other's.
func resourceLexeme(resourceID string) string {
	return "r" + hex.EncodeToString([]byte(resourceID)) + "0"
}

// Search implements memory.Knowledge, as memory's rank.go says, in one
// statement (searchSQL) and one round trip: a history of up to
// SearchExactMessages messages (resourceSizeSQL) is ranked whole by BM25;
// a longer one reads its bounded share: the resource's
// SearchRecentMessages newest messages (the (resource_id, id) index,
// backwards), how many of them hold each word in their text, the older
// messages that hold a word rare among them (the GIN index,
// SearchOlderMatches at most: which ones, the table's order decides),
// each scored from its doc; the best joined to their messages and
// threads, with the q.Context messages before and after each.
//
// The messages it returns, the results' and their context, hold what
// the callers of a search read (recall and the search route): Seq, ID,
// Role, Text and CreatedAt, not Model, Pending or RunID.
func (s *Store) Search(ctx context.Context, q memory.SearchQuery) ([]memory.SearchResult, error) {
	terms := memory.SearchTerms(q.Text)
	if len(terms) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, searchSQL, q.ResourceID, memory.SearchExactMessages, terms, memory.SearchRecentMessages,
		memory.SearchRareLately, resourceLexeme(q.ResourceID), memory.SearchOlderMatches, memory.NearWeight,
		q.ThreadID, q.ExcludeThreadID, q.Limit, max(0, q.Context))
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	out, err := readResults(rows, q.Limit, q.Context)
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	return out, nil
}

// searchSQL is the search of resource $1 for the words $3 (letters and
// digits: SearchTerms): the best $11 messages, of thread $9 (unless
// empty), not of thread $10, the best first, each in rows of its own
// message and of the $12 before and after it in its thread, in their
// order (each row the result's message_search id and seq, its thread,
// title and score, then the message). The messages are read by their
// key, (thread_id, seq), in order: the order and the limit keep the
// planner to that index rather than the (thread_id, id) one. Of its two
// rankings, the one the history's size calls for does its work (a gate
// on size, which resourceSizeSQL reads with its bound $2); the other's
// statements are never run.
//
// exact ranks the messages of a history of $2 messages at most that hold
// a word by BM25, as SQLite's bm25 does (k1 1.2, b 0.75). It reads the
// resource's messages through the (resource_id, id) index, work bounded
// by $2, whatever the other resources hold and however full the GIN
// index's pending list is. A message's document is its doc, its text and
// its neighbours': a word counts 1 in its text, $8 (NearWeight) in the
// neighbours'. A word weighs its inverse document frequency among the
// resource's messages, ln((N - n + 0.5) / (n + 0.5)) (1e-6 at least), n
// being how many hold it; a document's length is its doc's count of
// distinct words, against the mean of the resource's. What differs from
// bm25: a word counts once in the text and once in the neighbours,
// however often said there (a message's words rarely repeat: counting
// the repeats ranked no better on the recall benchmark, and costs an
// unnest of each document).
//
// bounded scores the bounded share of a longer history: its $4 newest
// messages and, for each word fewer than $5 of those hold in their text,
// $7 older messages at most that hold one (through the resource's lexeme
// $6), a word found in the neighbours weighing $8 of one found in the
// message. Its weights are SearchWordWeight's, ln(1 + $4 / n).
//
// In both, the words a tsquery drops (the english configuration's stop
// words) count for nothing.
var searchSQL = `WITH size AS MATERIALIZED (` + resourceSizeSQL + `),
	xwords AS MATERIALIZED (
		SELECT i, to_tsquery('english', w) AS q, to_tsquery('english', w || ':A') AS qa, to_tsquery('english', w || ':D') AS qd
		FROM unnest($3::text[]) WITH ORDINALITY AS u (w, i) WHERE numnode(to_tsquery('english', w)) > 0),
	docs AS MATERIALIZED (
		SELECT id, thread_id, seq, doc, length(doc) AS len FROM message_search WHERE resource_id = $1 ORDER BY id DESC LIMIT $2),
	xfound AS MATERIALIZED (
		SELECT * FROM docs WHERE doc @@ (SELECT string_agg(q::text, ' | ')::tsquery FROM xwords)),
	stats AS MATERIALIZED (
		SELECT count(*)::float8 AS n, avg(len)::float8 AS avgdl FROM docs),
	tf AS MATERIALIZED (
		SELECT f.id, f.thread_id, f.seq, f.len, w.i, (f.doc @@ w.qa)::int + $8::float8 * (f.doc @@ w.qd)::int AS f
		FROM xfound f CROSS JOIN xwords w WHERE f.doc @@ w.q),
	idf AS MATERIALIZED (
		SELECT i, greatest(1e-6, ln(((SELECT n FROM stats) - count(*) + 0.5) / (count(*) + 0.5))) AS idf FROM tf GROUP BY i),
	exact AS (
		SELECT t.id, t.thread_id, t.seq, sum(x.idf * t.f * 2.2 / (t.f + 1.2 * (0.25 + 0.75 * t.len / s.avgdl))) AS score
		FROM tf t JOIN idf x ON x.i = t.i CROSS JOIN stats s
		WHERE $9::text IN ('', t.thread_id) AND t.thread_id <> $10
		GROUP BY t.id, t.thread_id, t.seq),
	recent AS MATERIALIZED (
		SELECT id, thread_id, seq, doc FROM message_search WHERE resource_id = $1 ORDER BY id DESC LIMIT $4),
	queries AS MATERIALIZED (
		SELECT w, to_tsquery('english', w || ':A') AS qa, to_tsquery('english', w || ':D') AS qd FROM unnest($3::text[]) AS u (w)),
	words AS MATERIALIZED (
		SELECT w, qa, qd, numnode(qa) > 0 AS kept, (SELECT count(*) FROM recent r WHERE r.doc @@ qa) AS n FROM queries),
	q AS MATERIALIZED (
		SELECT to_tsquery('english', string_agg(w, ' | ') FILTER (WHERE kept)) AS any_word,
			to_tsquery('english', string_agg(w, ' | ') FILTER (WHERE kept AND n < $5)) AS rare
		FROM words),
	found AS (
		SELECT id, thread_id, seq, doc FROM recent WHERE doc @@ (SELECT any_word FROM q)
		UNION ALL
		SELECT * FROM (SELECT id, thread_id, seq, doc FROM message_search
			WHERE (SELECT rare FROM q) IS NOT NULL AND doc @@ ($6::tsquery && (SELECT rare FROM q))
				AND id < (SELECT min(id) FROM recent)
			LIMIT $7) older),
	bounded AS (
		SELECT f.id, f.thread_id, f.seq,
			(SELECT sum(ln(1 + $4::float8 / greatest(1, w.n)) * ((f.doc @@ w.qa)::int + $8::float8 * (f.doc @@ w.qd)::int)) FROM words w WHERE w.kept)
				* 2.2 / (1 + 1.2 * (0.25 + 0.75 * length(f.doc) / 30.0)) AS score
		FROM found f
		WHERE $9::text IN ('', f.thread_id) AND f.thread_id <> $10),
	best AS (
		SELECT id, thread_id, seq, score FROM exact WHERE (SELECT size <= $2 FROM size)
		UNION ALL
		SELECT id, thread_id, seq, score FROM bounded WHERE (SELECT size > $2 FROM size))
	SELECT b.id, b.seq, b.thread_id, (SELECT title FROM threads WHERE id = b.thread_id), b.score, m.seq, m.id, m.role, m.text, m.created_at
	FROM (SELECT id, thread_id, seq, score FROM best ORDER BY score DESC, id DESC LIMIT $11) b
	CROSS JOIN LATERAL (SELECT seq, id, role, text, created_at FROM messages
		WHERE thread_id = b.thread_id AND seq BETWEEN b.seq - $12 AND b.seq + $12 ORDER BY seq LIMIT 2 * $12 + 1) m
	ORDER BY b.score DESC, b.id DESC, m.seq`

// resourceSizeSQL is the number of messages of resource $1 when it is at
// most $2, or a larger number, reading a bounded number of its threads
// when it is longer: the sum of its first 64 threads' sizes when it has
// fewer or they are past the bound already; else, over its threads oldest
// first, the first running sum past the bound (the sum of all when none
// is).
const resourceSizeSQL = `SELECT CASE WHEN count(*) < 64 OR sum(last_seq) > $2::bigint THEN coalesce(sum(last_seq), 0)::bigint
		ELSE coalesce((SELECT run FROM (SELECT sum(last_seq) OVER (ORDER BY created_at, id ROWS UNBOUNDED PRECEDING) AS run
			FROM threads WHERE resource_id = $1) r WHERE run > $2 LIMIT 1), (SELECT sum(last_seq) FROM threads WHERE resource_id = $1))::bigint END AS size
	FROM (SELECT last_seq FROM threads WHERE resource_id = $1 LIMIT 64) t`

// readResults reads searchSQL's rows into at most limit results, each
// with the messages around it when context is above 0.
func readResults(rows pgx.Rows, limit, context int) ([]memory.SearchResult, error) {
	defer rows.Close()
	var v struct {
		key, at             int64
		thread, title, role pgtype.DriverBytes
		score               float64
		seq                 int64
		id, text            string
		created             time.Time
	}
	dest := []any{&v.key, &v.at, &v.thread, &v.title, &v.score, &v.seq, &v.id, &v.role, &v.text, &v.created}
	out := make([]memory.SearchResult, 0, min(limit, 64))
	c := around{msgs: make([]memory.Message, 0, aroundCap(context, limit))}
	var key int64
	var thread, title string
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if len(out) == 0 || v.key != key {
			// A thread's results often follow each other.
			if string(v.thread) != thread || string(v.title) != title {
				thread, title = string(v.thread), string(v.title)
			}
			key = v.key
			c.upTo(len(out))
			out = append(out, memory.SearchResult{ThreadID: thread, ThreadTitle: title, Score: v.score})
		}
		m := memory.Message{Seq: v.seq, ID: v.id, Role: role(v.role), Text: v.text, CreatedAt: v.created.UTC()}
		if v.seq == v.at {
			out[len(out)-1].Message = m
		} else {
			c.msgs = append(c.msgs, m)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	c.set(out)
	// The statement reads one snapshot, in which a result's message is
	// there (message_search's rows go with their messages'); a result
	// without its message (Seq 0: seqs start at 1) would be dropped.
	return slices.DeleteFunc(out, func(r memory.SearchResult) bool { return r.Message.Seq == 0 }), nil
}

// Around implements memory.Knowledge, in one statement (aroundSQL). The
// messages it reads hold what Search's do.
func (s *Store) Around(ctx context.Context, rs []memory.SearchResult, n int) error {
	if len(rs) == 0 {
		return nil
	}
	if n <= 0 {
		for i := range rs {
			rs[i].Before, rs[i].After = nil, nil
		}
		return nil
	}
	threads := make([]string, len(rs))
	seqs := make([]int64, len(rs))
	for i, r := range rs {
		threads[i], seqs[i] = r.ThreadID, r.Message.Seq
	}
	rows, err := s.pool.Query(ctx, aroundSQL, threads, seqs, n)
	if err != nil {
		return fmt.Errorf("reading messages: %w", err)
	}
	defer rows.Close()
	var v struct {
		i, seq   int64
		role     pgtype.DriverBytes
		id, text string
		created  time.Time
	}
	dest := []any{&v.i, &v.seq, &v.id, &v.role, &v.text, &v.created}
	c := around{msgs: make([]memory.Message, 0, aroundCap(n, len(rs)))}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("reading messages: %w", err)
		}
		c.upTo(int(v.i) - 1)
		c.msgs = append(c.msgs, memory.Message{Seq: v.seq, ID: v.id, Role: role(v.role), Text: v.text, CreatedAt: v.created.UTC()})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading messages: %w", err)
	}
	c.set(rs)
	return nil
}

// aroundSQL reads the messages of threads $1 within $3 of the seqs $2
// (each pair a result's thread and message), but the results' own, each
// row the index of its pair (from 1) and a message, in the pairs'
// order, each pair's messages in theirs. They are read as searchSQL
// reads a result's context, by the messages' key. The pairs are walked
// by their indexes (generate_subscripts), not unnested: PostgreSQL
// estimates an unnest of the arrays it is given by their length and one
// of parameters as 100 rows, so that the plan for the parameters looked
// dearer than each call's own and it planned every call again (about
// half the statement's time); generate_subscripts is 1,000 rows either
// way, and the prepared statement keeps its plan.
var aroundSQL = `SELECT r.i, m.seq, m.id, m.role, m.text, m.created_at
	FROM generate_subscripts($1::text[], 1) AS r (i)
	CROSS JOIN LATERAL (SELECT seq, id, role, text, created_at FROM messages
		WHERE thread_id = ($1::text[])[r.i] AND seq BETWEEN ($2::bigint[])[r.i] - $3 AND ($2::bigint[])[r.i] + $3 AND seq <> ($2::bigint[])[r.i]
		ORDER BY seq LIMIT 2 * $3) m
	ORDER BY r.i, m.seq`

// aroundCap is room for the messages around results, n either side of
// each: 256 at most, the rest as they come.
func aroundCap(n, results int) int {
	if n <= 0 || results <= 0 {
		return 0
	}
	return min(2*min(n, 128)*min(results, 128), 256)
}

// around gathers the context messages of results, read result by result
// in order, in one array.
type around struct {
	msgs []memory.Message
	// ends[i] is where the messages of result i end in msgs.
	ends []int
}

// upTo ends the messages of the results before result i (none for those
// that have none).
func (c *around) upTo(i int) {
	for len(c.ends) < i {
		c.ends = append(c.ends, len(c.msgs))
	}
}

// set puts the messages of each of rs before and after its message into
// its Before and After (nil when none), as memory.SetAround does, sharing
// c's array: each slice is capped at its end, so that appending to one
// does not write into another's.
func (c *around) set(rs []memory.SearchResult) {
	c.upTo(len(rs))
	from := 0
	for i := range rs {
		msgs := c.msgs[from:c.ends[i]]
		from = c.ends[i]
		split := 0
		for split < len(msgs) && msgs[split].Seq < rs[i].Message.Seq {
			split++
		}
		rs[i].Before, rs[i].After = nil, nil
		if split > 0 {
			rs[i].Before = msgs[:split:split]
		}
		if split < len(msgs) {
			rs[i].After = msgs[split:len(msgs):len(msgs)]
		}
	}
}

// role is a message's role as stored; the usual ones without a copy.
func role(b []byte) string {
	switch string(b) {
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	}
	return string(b)
}
