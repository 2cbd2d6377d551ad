package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// presenceEvery is how often the presence connection is checked, and a lost
// one connected again.
const presenceEvery = time.Second

// presence is an instance's session-level advisory lock, held on a
// connection of its own for as long as the store is open: the server lets
// go of it the moment that connection closes (a crash, a kill -9, a
// network cut), and leases named after it are free at once
// (lease_holder_alive, migration 0007). Its key is chosen at random among
// those no other instance holds; a connection lost and made again takes a
// new key, so that leases taken under the old one are free too.
type presence struct {
	cfg *pgx.ConnConfig
	// key is the advisory lock's key held now; 0 while there is none, and
	// then leases carry no key and live until they expire, as before.
	key        atomic.Int32
	mu         sync.Mutex
	conn       *pgx.Conn
	stop, done chan struct{}
}

// presenceClassSQL is the first key of the presence locks: the schema's,
// so that deployments in different schemas of one database keep apart.
const presenceClassSQL = `(hashtext(current_schema() || '/presence') & 2147483647)::int`

// startPresence connects, takes a key and checks the connection every
// presenceEvery until stopPresence.
func startPresence(ctx context.Context, cfg *pgx.ConnConfig) (*presence, error) {
	p := &presence{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	if err := p.connect(ctx); err != nil {
		return nil, err
	}
	go p.watch()
	return p, nil
}

// owner is a new lease owner: a turn's own id, after the presence's key.
func (p *presence) owner(turnID string) string {
	if k := p.key.Load(); k > 0 {
		return strconv.Itoa(int(k)) + ":" + turnID
	}
	return turnID
}

// connect opens the presence connection and takes a free key.
func (p *presence) connect(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		return fmt.Errorf("connecting for the instance's presence: %w", err)
	}
	for range 10 {
		key := rand.Int32N(1<<31-1) + 1
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+presenceClassSQL+`, $1)`, key).Scan(&got); err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
			return fmt.Errorf("taking the instance's presence: %w", err)
		}
		if got {
			p.mu.Lock()
			p.conn = conn
			p.mu.Unlock()
			p.key.Store(key)
			return nil
		}
	}
	_ = conn.Close(context.WithoutCancel(ctx))
	return errors.New("taking the instance's presence: every key tried is another instance's")
}

// watch checks the connection every presenceEvery, and makes it again when
// it is lost.
func (p *presence) watch() {
	defer close(p.done)
	tick := time.NewTicker(presenceEvery)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), presenceEvery)
		p.check(ctx)
		cancel()
	}
}

// check pings the connection; when that fails, it drops the key and
// connects again (now, or at a later check).
func (p *presence) check(ctx context.Context) {
	p.mu.Lock()
	conn := p.conn
	p.mu.Unlock()
	if conn != nil {
		if err := conn.Ping(ctx); err == nil {
			return
		}
		p.key.Store(0)
		p.mu.Lock()
		p.conn = nil
		p.mu.Unlock()
		_ = conn.Close(ctx)
	}
	_ = p.connect(ctx)
}

// close lets go of the presence: the instance's leases are free at once.
func (p *presence) close() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.conn.Close(ctx)
		p.conn = nil
	}
	p.key.Store(0)
}
