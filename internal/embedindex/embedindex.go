// Package embedindex embeds stored messages for recall, off the reply's
// path: a background Indexer asks the store which messages have no vector
// of the configured model yet, in the order they were stored, embeds them
// in batches and stores their vectors. A turn never waits for it; it only
// wakes it (Wake) after storing messages. A failed call is tried again
// with a growing backoff, the same messages first; a text the provider
// refuses (a non-retryable error) is marked so that it is not asked for
// again. Each message is embedded once: its vector is kept with the
// model's name, and when the model changes the old vectors are dropped and
// the messages embedded again.
package embedindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/companionhq/companion/internal/embed"
	"github.com/companionhq/companion/internal/memory"
)

// Embedder makes the vectors; an embed.Embedder is one.
type Embedder interface {
	Embed(ctx context.Context, texts []string, kind embed.Kind) ([][]float32, error)
	Model() string
	MaxBatch() int
}

// Observer is told what the indexer does, for metrics. Its methods must
// be safe for concurrent use and must not block.
type Observer interface {
	// Embedded reports n messages embedded and stored, and how long the
	// call took.
	Embedded(n int, took time.Duration)
	// EmbedFailed reports a failed call: retryable says whether it is
	// tried again, or its texts marked as refused.
	EmbedFailed(retryable bool)
}

type nopObserver struct{}

func (nopObserver) Embedded(int, time.Duration) {}
func (nopObserver) EmbedFailed(bool)            {}

// Defaults of Config.
const (
	DefaultBatch       = 64
	DefaultInterval    = 5 * time.Second
	DefaultRescan      = time.Minute
	DefaultCallTimeout = 30 * time.Second
	DefaultMaxBackoff  = time.Minute
)

// Config configures an Indexer.
type Config struct {
	Store    memory.Vectors
	Embedder Embedder
	// Batch is how many messages one call embeds at most (and the
	// embedder's MaxBatch); 0 is DefaultBatch.
	Batch int
	// Interval is how often an idle indexer looks for messages that no
	// Wake told it of (stored by another instance, or imported); 0 is
	// DefaultInterval.
	Interval time.Duration
	// Rescan is how often the indexer starts again from the first
	// message: a message whose position is below those seen already (a
	// transaction that committed late, on PostgreSQL) is found then. 0 is
	// DefaultRescan.
	Rescan time.Duration
	// CallTimeout bounds one embedding call; MaxBackoff the wait between
	// failed ones (it starts at a second and doubles).
	CallTimeout, MaxBackoff time.Duration
	Observer                Observer
	Logger                  *slog.Logger
}

// Indexer embeds what the store holds without a vector. Run runs it.
type Indexer struct {
	cfg  Config
	wake chan struct{}
}

// New checks cfg and returns an Indexer.
func New(cfg Config) (*Indexer, error) {
	if cfg.Store == nil || cfg.Embedder == nil {
		return nil, errors.New("embedindex: a store and an embedder are required")
	}
	if cfg.Batch < 0 || cfg.Interval < 0 || cfg.Rescan < 0 || cfg.CallTimeout < 0 || cfg.MaxBackoff < 0 {
		return nil, errors.New("embedindex: the batch and the intervals must not be negative")
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if m := cfg.Embedder.MaxBatch(); m > 0 && cfg.Batch > m {
		cfg.Batch = m
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Rescan == 0 {
		cfg.Rescan = DefaultRescan
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Indexer{cfg: cfg, wake: make(chan struct{}, 1)}, nil
}

// Model is the name the vectors are stored under.
func (ix *Indexer) Model() string { return ix.cfg.Embedder.Model() }

// Wake tells the indexer that messages were stored. It never blocks.
func (ix *Indexer) Wake() {
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// Run embeds until ctx ends, and returns nil then. It first drops the
// vectors of other models, so that their messages are embedded again.
func (ix *Indexer) Run(ctx context.Context) error {
	backoff := time.Duration(0)
	// A model whose vectors' length is learnt from its first answer names
	// them only then (embed's Model): ask it once before anything is
	// compared with what is stored.
	for ix.unsized() {
		_, err := ix.cfg.Embedder.Embed(ctx, []string{"dimensions"}, embed.Document)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			if ix.unsized() {
				return errors.New("embedindex: the embedding model answered without telling its vectors' length")
			}
			break
		}
		backoff = ix.next(backoff)
		ix.cfg.Logger.Warn("the embedding model does not answer; trying again", "err", err, "in", backoff)
		if !sleep(ctx, backoff, nil) {
			return nil
		}
	}
	model := ix.Model()
	backoff = 0
	for {
		n, err := ix.cfg.Store.DropVectors(ctx, model)
		if err == nil {
			if n > 0 {
				ix.cfg.Logger.Info("dropped the vectors of another embedding model; their messages are embedded again", "vectors", n, "model", model)
			}
			break
		}
		backoff = ix.next(backoff)
		ix.cfg.Logger.Warn("could not drop the vectors of other embedding models; trying again", "err", err, "in", backoff)
		if !sleep(ctx, backoff, nil) {
			return nil
		}
	}
	var after int64
	backoff = 0
	lastScan := time.Now()
	for {
		n, err := ix.pass(ctx, &after)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			backoff = ix.next(backoff)
			ix.cfg.Logger.Warn("embedding messages failed; trying again", "err", err, "in", backoff)
			if !sleep(ctx, backoff, nil) {
				return nil
			}
			continue
		case n > 0:
			backoff = 0
			continue
		}
		// Nothing after the last position seen: once in a while, look
		// from the start again, else wait for news.
		if time.Since(lastScan) >= ix.cfg.Rescan && after > 0 {
			after, lastScan = 0, time.Now()
			continue
		}
		if !sleep(ctx, ix.cfg.Interval, ix.wake) {
			return nil
		}
	}
}

// unsized reports whether the embedder does not know its vectors' length
// yet.
func (ix *Indexer) unsized() bool {
	d, ok := ix.cfg.Embedder.(interface{ Dimensions() int })
	return ok && d.Dimensions() == 0
}

// next is the wait after a failure that followed a wait of last.
func (ix *Indexer) next(last time.Duration) time.Duration {
	if last == 0 {
		return time.Second
	}
	return min(2*last, ix.cfg.MaxBackoff)
}

// sleep waits d, or until wake has news; false when ctx ended.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}

// pass embeds one batch of the messages after *after and stores their
// vectors, moving *after past them; it returns how many it took.
func (ix *Indexer) pass(ctx context.Context, after *int64) (int, error) {
	model := ix.Model()
	us, err := ix.cfg.Store.Unembedded(ctx, model, *after, ix.cfg.Batch)
	if err != nil || len(us) == 0 {
		return 0, err
	}
	var calls []call
	vs, err := ix.embed(ctx, us, &calls)
	if err != nil {
		return 0, err
	}
	if err := ix.cfg.Store.PutVectors(ctx, model, vs); err != nil {
		return 0, err
	}
	// Counted once stored: what the metric says is embedded, a search finds.
	for _, c := range calls {
		ix.cfg.Observer.Embedded(c.n, c.took)
	}
	*after = us[len(us)-1].Pos
	return len(us), nil
}

// embed returns the vectors of us. A call the provider refuses is split,
// to find the texts it refuses: those get an empty vector (not asked for
// again), the others theirs.
func (ix *Indexer) embed(ctx context.Context, us []memory.Unembedded, calls *[]call) ([]memory.MessageVector, error) {
	texts := make([]string, len(us))
	for i, u := range us {
		texts[i] = u.Text
	}
	started := time.Now()
	cctx, cancel := context.WithTimeout(ctx, ix.cfg.CallTimeout)
	vecs, err := ix.cfg.Embedder.Embed(cctx, texts, embed.Document)
	cancel()
	if err == nil && len(vecs) != len(us) {
		err = fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(us))
	}
	if err != nil {
		retryable := Retryable(err) || ctx.Err() != nil
		ix.cfg.Observer.EmbedFailed(retryable)
		if retryable {
			return nil, err
		}
		if len(us) == 1 {
			ix.cfg.Logger.Warn("the embedding model refused a message; it is left out of vector search", "err", err)
			return []memory.MessageVector{vectorOf(us[0], nil)}, nil
		}
		half := len(us) / 2
		first, err := ix.embed(ctx, us[:half], calls)
		if err != nil {
			return nil, err
		}
		second, err := ix.embed(ctx, us[half:], calls)
		if err != nil {
			return nil, err
		}
		return append(first, second...), nil
	}
	*calls = append(*calls, call{len(us), time.Since(started)})
	out := make([]memory.MessageVector, len(us))
	for i, u := range us {
		out[i] = vectorOf(u, vecs[i])
	}
	return out, nil
}

// call is a successful embedding call: how many texts, how long.
type call struct {
	n    int
	took time.Duration
}

func vectorOf(u memory.Unembedded, v []float32) memory.MessageVector {
	return memory.MessageVector{ThreadID: u.ThreadID, Seq: u.Seq, ID: u.ID, Vec: v}
}

// Retryable reports whether a failed embedding call may succeed when tried
// again: an *embed.Error says so; any other error (a network error, a
// timeout) is taken to be passing.
func Retryable(err error) bool {
	var e *embed.Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	return true
}

// Flush embeds everything the store holds without a vector now, in the
// caller's goroutine, and returns when nothing is left or on the first
// error. Tests and tools use it; the service relies on Run.
func (ix *Indexer) Flush(ctx context.Context) error {
	var after int64
	for {
		n, err := ix.pass(ctx, &after)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}
