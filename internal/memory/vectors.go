package memory

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// The vector index: with an embedding model configured, every message with
// text gets a vector, embedded once, after it is stored, off the reply's
// path (a background indexer asks the store what is still to embed, by
// position). A search then ranks by vector as well as by words (hybrid).
// A vector is kept with the name of the model that made it: vectors of
// another model are not comparable, and are dropped when the model changes.

// Unembedded is a message that has no vector of a model yet.
type Unembedded struct {
	// Pos is the message's position in the store's order of storing: the
	// indexer asks for what comes after the last it saw.
	Pos      int64
	ThreadID string
	Seq      int64
	// ID is the message's id: a vector is stored only while the message at
	// ThreadID and Seq is still this one.
	ID, ResourceID, Text string
}

// MessageVector is the vector of one message. An empty Vec marks a
// message that could not be embedded (the provider refused its text): it
// is not asked for again, and no search finds it by vector.
type MessageVector struct {
	ThreadID string
	Seq      int64
	ID       string
	Vec      []float32
}

// VectorCandidates is how many of a resource's newest vectors a vector
// search compares with the query: the work of a search stays bounded
// whatever the history (the full-text ranking reaches older messages).
const VectorCandidates = 2000

// Vectors is the part of a store that keeps messages' vectors.
// internal/memory/memorytest checks it with the rest.
type Vectors interface {
	// Unembedded returns, in the store's order, up to limit messages after
	// position after whose text is not empty and that have no vector of
	// model.
	Unembedded(ctx context.Context, model string, after int64, limit int) ([]Unembedded, error)
	// PutVectors stores the vectors of model for messages, each only while
	// its message (thread, seq and id) is still stored: a message deleted
	// or erased while it was being embedded gets none.
	PutVectors(ctx context.Context, model string, vs []MessageVector) error
	// SearchVectors returns the q.Limit messages of q.ResourceID (with
	// q.ThreadID and q.ExcludeThreadID as Search has them) whose vectors
	// of model are nearest to v (a unit vector), among the resource's
	// VectorCandidates newest vectors, nearest first; Score is the cosine.
	// Context is not read (Around does).
	SearchVectors(ctx context.Context, q SearchQuery, model string, v []float32) ([]SearchResult, error)
	// DropVectors deletes every vector not of model, and returns how many.
	DropVectors(ctx context.Context, model string) (int64, error)
}

// EncodeVector is v as a store keeps it: little-endian float32s.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reads what EncodeVector wrote.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("a vector of %d bytes is not float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// ErrVectorSize: a stored vector's length is not the query's.
var ErrVectorSize = errors.New("vector sizes differ")

// dot is the dot product of two encoded vectors' floats, a read from b.
func dot(q []float32, b []byte) (float32, error) {
	if len(b) != 4*len(q) {
		return 0, ErrVectorSize
	}
	var s float32
	for i, f := range q {
		s += f * math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return s, nil
}

// Scored is a stored vector's owner and its cosine with a query.
type Scored[K any] struct {
	Key   K
	Score float64
}

// Nearest keeps the limit best of the encoded vectors next yields (each
// with its key) by cosine with q, a unit vector: stored vectors are unit
// vectors too, so the cosine is the dot product. A vector of another
// length (another model's, stored before a change) is skipped; an empty
// one (a message that could not be embedded) too.
func Nearest[K any](q []float32, limit int, next func(yield func(key K, enc []byte) bool) error) ([]Scored[K], error) {
	if limit <= 0 {
		return nil, nil
	}
	var best []Scored[K]
	err := next(func(key K, enc []byte) bool {
		s, err := dot(q, enc)
		if err != nil {
			return true
		}
		if len(best) == limit && float64(s) <= best[limit-1].Score {
			return true
		}
		i, _ := slices.BinarySearchFunc(best, float64(s), func(e Scored[K], t float64) int { return cmp.Compare(t, e.Score) })
		// Among equal scores, the first yielded (the newest) stays first.
		for i < len(best) && best[i].Score == float64(s) {
			i++
		}
		best = slices.Insert(best, i, Scored[K]{key, float64(s)})
		if len(best) > limit {
			best = best[:limit]
		}
		return true
	})
	return best, err
}

// MessageKey names a message by its thread and position.
type MessageKey struct {
	ThreadID string
	Seq      int64
}

// Rows is what both stores' query results offer (database/sql's and
// pgx's).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// NearestRows is Nearest over rows of (thread_id, seq, vec), as both
// stores' vector searches read their candidates. The caller closes rows.
func NearestRows(q []float32, limit int, rows Rows) ([]Scored[MessageKey], error) {
	return Nearest(q, limit, func(yield func(MessageKey, []byte) bool) error {
		for rows.Next() {
			var k MessageKey
			var enc []byte
			if err := rows.Scan(&k.ThreadID, &k.Seq, &enc); err != nil {
				return err
			}
			if !yield(k, enc) {
				break
			}
		}
		return rows.Err()
	})
}
