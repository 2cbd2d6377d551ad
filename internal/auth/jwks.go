package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// How the JWKS is fetched.
const (
	// jwksFetchTimeout bounds one fetch, connection to last byte.
	jwksFetchTimeout = 10 * time.Second
	// jwksMaxBytes bounds the size of the JWKS document.
	jwksMaxBytes = 1 << 20
	// jwksRefreshEvery is how often the keys are fetched again while all is
	// well, so keys the provider withdraws stop being accepted.
	jwksRefreshEvery = 15 * time.Minute
	// jwksMinInterval is the least time between two fetches a token can
	// cause (one naming an unknown key), and how often a failing fetch is
	// retried in the background.
	jwksMinInterval = 30 * time.Second
)

// errNoKeys is the cause of a refusal before any key set was fetched.
var errNoKeys = errors.New("no signing keys have been fetched")

// jwks holds the identity provider's signing keys. It fetches them at
// start, every jwksRefreshEvery, and again when a token names a key it does
// not know (at most once per jwksMinInterval); concurrent tokens wait for
// the one fetch under way instead of starting their own. While fetches
// fail, the keys of the last good fetch stay in use.
type jwks struct {
	url    string
	client *http.Client
	log    *slog.Logger
	now    func() time.Time
	ctx    context.Context // of the background work; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	keys atomic.Pointer[keyfunc.Keyfunc] // nil until a fetch succeeds

	mu        sync.Mutex
	closed    bool
	attempted time.Time     // when the last fetch began, by now
	failure   error         // why the last fetch failed; nil after a success
	inflight  chan struct{} // closed when the fetch under way ends; nil when none
}

// newJWKS fetches the key set at cfg.JWKSURL once and starts the background
// refresh. A failed fetch is logged and left to the refresh; ctx bounds the
// wait for the first fetch.
func newJWKS(ctx context.Context, cfg Config) (*jwks, error) {
	u, err := url.Parse(cfg.JWKSURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the JWKS URL %q must be an http:// or https:// URL", cfg.JWKSURL)
	}
	client := &http.Client{Timeout: jwksFetchTimeout}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		client = &c
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client.Transport = limitedTransport{base: base, max: jwksMaxBytes}

	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	j := &jwks{
		url:    cfg.JWKSURL,
		client: client,
		log:    cfg.Logger.With("jwks", u.Redacted()),
		now:    cfg.Now,
		ctx:    bg,
		cancel: cancel,
	}
	j.mu.Lock()
	done := j.start()
	j.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		j.close()
		return nil, fmt.Errorf("fetching the JWKS: %w", ctx.Err())
	}
	j.wg.Add(1)
	go j.run()
	return j, nil
}

// key is the public key to check t with: the one its kid names, or every
// key when it names none. An unknown kid causes a fetch (see jwks).
func (j *jwks) key(ctx context.Context, t *jwt.Token) (any, error) {
	key, err := j.lookup(ctx, t)
	if errors.Is(err, jwkset.ErrKeyNotFound) || errors.Is(err, errNoKeys) {
		// The provider may have rotated its keys since the last fetch.
		j.refresh(ctx)
		key, err = j.lookup(ctx, t)
	}
	if err == nil {
		return key, nil
	}
	if errors.Is(err, jwkset.ErrKeyNotFound) || errors.Is(err, errNoKeys) {
		j.mu.Lock()
		failure := j.failure
		j.mu.Unlock()
		if failure != nil {
			return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, failure)
		}
		if errors.Is(err, errNoKeys) {
			return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, err)
		}
	}
	return nil, err
}

// lookup finds t's key among the keys fetched, without fetching.
func (j *jwks) lookup(ctx context.Context, t *jwt.Token) (any, error) {
	kf := j.keys.Load()
	if kf == nil {
		return nil, errNoKeys
	}
	key, err := (*kf).KeyfuncCtx(ctx)(t)
	if err != nil {
		return nil, err
	}
	// A JWKS may hold symmetric ("oct") keys; a token is never checked
	// with one, or whoever can read the JWKS could sign tokens.
	switch k := key.(type) {
	case []byte:
		return nil, errors.New("the JWKS key the token names is symmetric")
	case jwt.VerificationKeySet:
		var public jwt.VerificationKeySet
		for _, pk := range k.Keys {
			if _, symmetric := pk.([]byte); !symmetric {
				public.Keys = append(public.Keys, pk)
			}
		}
		return public, nil
	}
	return key, nil
}

// refresh fetches the keys again unless a fetch began less than
// jwksMinInterval ago, and waits (within ctx) for the fetch under way.
func (j *jwks) refresh(ctx context.Context) {
	j.mu.Lock()
	done := j.inflight
	if done == nil && !j.closed && j.now().Sub(j.attempted) >= jwksMinInterval {
		done = j.start()
	}
	j.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// run refreshes the keys in the background until Close.
func (j *jwks) run() {
	defer j.wg.Done()
	t := time.NewTimer(j.nextRefresh())
	defer t.Stop()
	for {
		select {
		case <-j.ctx.Done():
			return
		case <-t.C:
		}
		j.mu.Lock()
		done := j.inflight
		if done == nil && !j.closed {
			done = j.start()
		}
		j.mu.Unlock()
		select {
		case <-done:
		case <-j.ctx.Done():
			return
		}
		t.Reset(j.nextRefresh())
	}
}

// nextRefresh is the wait before the next background fetch: short while
// fetches fail.
func (j *jwks) nextRefresh() time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failure != nil || j.keys.Load() == nil {
		return jwksMinInterval
	}
	return jwksRefreshEvery
}

// start begins a fetch in the background and returns a channel closed when
// it ends. j.mu must be held.
func (j *jwks) start() chan struct{} {
	done := make(chan struct{})
	j.inflight = done
	j.attempted = j.now()
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		n, err := j.fetch()
		j.mu.Lock()
		failedBefore := j.failure != nil
		j.failure = err
		j.inflight = nil
		j.mu.Unlock()
		defer close(done) // after the log line, so whoever waits can read it
		switch {
		case j.ctx.Err() != nil:
			// Closing; the fetch was cancelled.
		case err != nil:
			j.log.Warn("JWKS fetch failed; tokens signed by keys not fetched before are refused until a fetch succeeds", "err", err)
		case failedBefore || n.first:
			j.log.Info("JWKS fetched", "keys", n.keys)
		default:
			j.log.Debug("JWKS fetched", "keys", n.keys)
		}
	}()
	return done
}

type fetched struct {
	keys  int
	first bool
}

// fetch gets the key set and puts it in use, unless it holds no keys.
func (j *jwks) fetch() (fetched, error) {
	ctx, cancel := context.WithTimeout(j.ctx, jwksFetchTimeout)
	defer cancel()
	store, err := jwkset.NewStorageFromHTTP(j.url, jwkset.HTTPClientStorageOptions{
		Client:      j.client,
		Ctx:         ctx,
		HTTPTimeout: jwksFetchTimeout,
	})
	if err != nil {
		return fetched{}, err
	}
	all, err := store.KeyReadAll(ctx)
	if err != nil {
		return fetched{}, err
	}
	if len(all) == 0 {
		return fetched{}, errors.New("the JWKS holds no key this service can use")
	}
	kf, err := keyfunc.New(keyfunc.Options{
		Ctx:     j.ctx,
		Storage: store,
		// Keys meant for encryption are not used to check signatures.
		UseWhitelist: []jwkset.USE{jwkset.UseSig, ""},
	})
	if err != nil {
		return fetched{}, err
	}
	first := j.keys.Swap(&kf) == nil
	return fetched{keys: len(all), first: first}, nil
}

// close stops the background work and waits for it to end.
func (j *jwks) close() {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	j.cancel()
	j.wg.Wait()
}

// limitedTransport refuses response bodies larger than max.
type limitedTransport struct {
	base http.RoundTripper
	max  int64
}

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = http.MaxBytesReader(nil, resp.Body, t.max)
	return resp, nil
}
