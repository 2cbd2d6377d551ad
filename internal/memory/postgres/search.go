package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
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
	ON CONFLICT (thread_id, seq) DO UPDATE SET doc = excluded.doc`

// resourceLexeme is the lexeme that search_doc adds to the doc of every
// message of resourceID's threads: 'r', the hex of the id's bytes, '0'.
// As a tsquery it matches that resource's messages and no other's.
func resourceLexeme(resourceID string) string {
	return "r" + hex.EncodeToString([]byte(resourceID)) + "0"
}

// rankWeights are ts_rank's weights of D, C, B and A: a word found in a
// message's neighbours (D) counts 0.35 of one found in the message (A).
const rankWeights = `'{0.35, 0, 0, 1}'`

// searchSQL finds the best $5 messages whose doc has the resource lexeme
// $1 and any of the words of the tsquery $2 ("w1 | w2 | ..."), of thread
// $3 unless that is empty, not of thread $4.
var searchSQL = `SELECT s.thread_id, t.title, s.score, ` + prefixed("m.", messageCols) + `
	FROM (SELECT thread_id, seq, ts_rank(` + rankWeights + `, doc, ($1::tsquery && to_tsquery('english', $2))) AS score
		FROM message_search
		WHERE doc @@ ($1::tsquery && to_tsquery('english', $2)) AND ($3 = '' OR thread_id = $3) AND thread_id <> $4
		ORDER BY score DESC, seq DESC, thread_id LIMIT $5) s
	JOIN messages m ON m.thread_id = s.thread_id AND m.seq = s.seq
	JOIN threads t ON t.id = s.thread_id
	ORDER BY s.score DESC, s.seq DESC, s.thread_id`

// Search implements memory.Knowledge: the messages whose doc has the
// resource's lexeme and any of the words (english stemming), ranked by
// ts_rank. A text without a word to look for (only stop words, or none)
// finds nothing.
func (s *Store) Search(ctx context.Context, q memory.SearchQuery) ([]memory.SearchResult, error) {
	terms := memory.SearchTerms(q.Text)
	if len(terms) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	// Each term is letters and digits (SearchTerms): no tsquery operator
	// gets through.
	rows, err := s.pool.Query(ctx, searchSQL, resourceLexeme(q.ResourceID), strings.Join(terms, " | "), q.ThreadID, q.ExcludeThreadID, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.SearchResult, error) {
		var res memory.SearchResult
		var score float32
		m, err := scanMessage(r, &res.ThreadID, &res.ThreadTitle, &score)
		res.Message, res.Score = m, float64(score)
		return res, err
	})
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	if q.Context > 0 && len(out) > 0 {
		if err := s.around(ctx, out, q.Context); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// around reads the n messages before and after each result's in its
// thread, in one round trip.
func (s *Store) around(ctx context.Context, rs []memory.SearchResult, n int) error {
	var b pgx.Batch
	for _, r := range rs {
		b.Queue(`SELECT `+messageCols+` FROM messages WHERE thread_id = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq`,
			r.ThreadID, r.Message.Seq-int64(n), r.Message.Seq+int64(n))
	}
	return readBatch(s.pool.SendBatch(ctx, &b), func(br pgx.BatchResults) error {
		for i := range rs {
			rows, err := br.Query()
			if err != nil {
				return fmt.Errorf("reading messages: %w", err)
			}
			msgs, err := collectMessages(rows)
			if err != nil {
				return err
			}
			r := &rs[i]
			for _, m := range msgs {
				switch {
				case m.Seq < r.Message.Seq:
					r.Before = append(r.Before, m)
				case m.Seq > r.Message.Seq:
					r.After = append(r.After, m)
				}
			}
		}
		return nil
	})
}

// prefixed is cols (a list of columns) with each column qualified by p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, c := range parts {
		parts[i] = p + c
	}
	return strings.Join(parts, ", ")
}
