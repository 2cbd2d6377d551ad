package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

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
	out, err := readResults(rows, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	return out, nil
}

// readResults reads searchSQL's rows into at most limit results, each
// with the messages around it.
func readResults(rows pgx.Rows, limit int) ([]memory.SearchResult, error) {
	defer rows.Close()
	out := make([]memory.SearchResult, 0, limit)
	var around [][]memory.Message
	var key, at, last int64
	var thread, title string
	var score float64
	for rows.Next() {
		m, err := scanMessage(rows, &key, &at, &thread, &title, &score)
		if err != nil {
			return nil, err
		}
		if len(out) == 0 || key != last {
			last = key
			out = append(out, memory.SearchResult{ThreadID: thread, ThreadTitle: title, Score: score})
			around = append(around, nil)
		}
		if m.Seq == at {
			out[len(out)-1].Message = m
		} else {
			around[len(out)-1] = append(around[len(out)-1], m)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		memory.SetAround(&out[i], around[i])
	}
	// The statement reads one snapshot, in which a result's message is
	// there (message_search's rows go with their messages'); a result
	// without its message (Seq 0: seqs start at 1) would be dropped.
	return slices.DeleteFunc(out, func(r memory.SearchResult) bool { return r.Message.Seq == 0 }), nil
}

// searchSQL is the search of resource $1 for the words $3 (letters and
// digits: SearchTerms): the best $11 messages, of thread $9 (unless
// empty), not of thread $10, the best first, each in rows of its own
// message and of the $12 before and after it in its thread, in their
// order (each row the result's message_search id and seq, its thread,
// title and score, then the message). The messages are read by the
// thread's key, in order (the order and the limit keep the planner to
// that index rather than the (thread_id, id) one). Of its two rankings, the one the history's size calls for does
// its work (a gate on size, which resourceSizeSQL reads with its bound
// $2); the other's statements are never run.
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
	SELECT b.id, b.seq, b.thread_id, (SELECT title FROM threads WHERE id = b.thread_id), b.score, ` + messageColsOf("m") + `
	FROM (SELECT id, thread_id, seq, score FROM best ORDER BY score DESC, id DESC LIMIT $11) b
	CROSS JOIN LATERAL (SELECT ` + messageCols + ` FROM messages
		WHERE thread_id = b.thread_id AND seq BETWEEN b.seq - $12 AND b.seq + $12 ORDER BY seq LIMIT 2 * $12 + 1) m
	ORDER BY b.score DESC, b.id DESC, m.seq`

// resourceSizeSQL is the number of messages of resource $1 when it is at
// most $2, or a larger number, reading a bounded number of its threads
// when it is longer: the sum of its first 64 threads' sizes when it has
// fewer or they are past the bound already; else, over its threads oldest
// first, the first running sum past the bound (the sum of all when none
// is).
const resourceSizeSQL = `SELECT CASE WHEN count(*) < 64 OR sum(last_seq) > $2 THEN coalesce(sum(last_seq), 0)::bigint
		ELSE coalesce((SELECT run FROM (SELECT sum(last_seq) OVER (ORDER BY created_at, id ROWS UNBOUNDED PRECEDING) AS run
			FROM threads WHERE resource_id = $1) r WHERE run > $2 LIMIT 1), (SELECT sum(last_seq) FROM threads WHERE resource_id = $1))::bigint END AS size
	FROM (SELECT last_seq FROM threads WHERE resource_id = $1 LIMIT 64) t`

// Around implements memory.Knowledge, in one statement (aroundSQL).
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
	around := make([][]memory.Message, len(rs))
	var i int64
	for rows.Next() {
		m, err := scanMessage(rows, &i)
		if err != nil {
			return fmt.Errorf("reading messages: %w", err)
		}
		around[i-1] = append(around[i-1], m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading messages: %w", err)
	}
	for i := range rs {
		memory.SetAround(&rs[i], around[i])
	}
	return nil
}

// aroundSQL reads the messages of threads $1 within $3 of the seqs $2
// (each pair a result's thread and message), but the results' own, each
// row the ordinal of its pair (from 1) and a message, in the pairs'
// order, each pair's messages in theirs. They are read as searchSQL
// reads a result's context, by the messages' key.
var aroundSQL = `SELECT r.i, ` + messageColsOf("m") + `
	FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS r (thread_id, seq, i)
	CROSS JOIN LATERAL (SELECT ` + messageCols + ` FROM messages
		WHERE thread_id = r.thread_id AND seq BETWEEN r.seq - $3 AND r.seq + $3 AND seq <> r.seq ORDER BY seq LIMIT 2 * $3) m
	ORDER BY r.i, m.seq`

// messageColsOf is messageCols, each qualified by table t.
func messageColsOf(t string) string {
	parts := strings.Split(messageCols, ", ")
	for i, c := range parts {
		parts[i] = t + "." + c
	}
	return strings.Join(parts, ", ")
}
