package sqlite

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/companionhq/companion/internal/memory"
)

// The recall index is messages_fts (migration 0006): a contentless FTS5
// table whose rowid is the message's, with the resource's token (res),
// the message's text and its neighbours' (near).

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

// resourceToken is the one token the index's res column holds for the
// messages of resourceID's threads, as migration 0006 computes it: 'r',
// the hex of the id's bytes, '0'. Letters and digits only, so the
// tokenizer keeps it whole; ending in a digit, so the porter stemmer
// leaves it as it is (it would make "r61ed" of "r61ed" and "r61" alike).
func resourceToken(resourceID string) string {
	return "r" + hex.EncodeToString([]byte(resourceID)) + "0"
}

// nearWeight is what a word found in a message's neighbours counts for
// beside one found in the message itself.
const nearWeight = 0.35

// matchExpr is the FTS5 query for the messages of the resource whose token
// is token that hold any of terms, in their text or near. Each term is
// quoted: SearchTerms made it letters and digits, and quoted it cannot be
// read as an operator (AND, NOT, NEAR) either.
func matchExpr(token string, terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + t + `"`
	}
	return `res:"` + token + `" AND {text near}:(` + strings.Join(quoted, " OR ") + `)`
}

// Search implements memory.Knowledge: bm25 over the index, the resource's
// token required, the message's own text weighing 1 and its neighbours'
// nearWeight. A text without a word to look for (only stop words, or
// none) finds nothing.
func (s *Store) Search(ctx context.Context, q memory.SearchQuery) ([]memory.SearchResult, error) {
	terms := memory.SearchTerms(q.Text)
	if len(terms) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(`SELECT m.thread_id, t.title, -bm25(messages_fts, 0, 1.0, %g) AS score, %s
		FROM messages_fts f JOIN messages m ON m.rowid = f.rowid JOIN threads t ON t.id = m.thread_id
		WHERE messages_fts MATCH ?1 AND (?2 = '' OR m.thread_id = ?2) AND m.thread_id <> ?3
		ORDER BY score DESC, f.rowid DESC LIMIT ?4`, nearWeight, prefixed("m.", messageCols)),
		matchExpr(resourceToken(q.ResourceID), terms), q.ThreadID, q.ExcludeThreadID, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
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
	if q.Context > 0 {
		for i := range out {
			if err := s.around(ctx, &out[i], q.Context); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// around reads the n messages before and after r's in its thread.
func (s *Store) around(ctx context.Context, r *memory.SearchResult, n int) error {
	msgs, err := queryMessages(ctx, s.db, `SELECT `+messageCols+` FROM messages WHERE thread_id = ? AND seq BETWEEN ? AND ? ORDER BY seq`,
		r.ThreadID, r.Message.Seq-int64(n), r.Message.Seq+int64(n))
	if err != nil {
		return err
	}
	for _, m := range msgs {
		switch {
		case m.Seq < r.Message.Seq:
			r.Before = append(r.Before, m)
		case m.Seq > r.Message.Seq:
			r.After = append(r.After, m)
		}
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
