//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// target is one kind of request the load generator sends.
type target struct {
	// url is where requests go (POST).
	url string
	// header is sent with every request.
	header http.Header
	// body returns the body of the n-th request of the run; n is never the
	// same twice, so that each request can name a fresh thread.
	body func(n uint64) []byte
	// stream marks a Server-Sent Events answer, read event by event; its
	// last data line must satisfy done.
	stream bool
	done   func(lastData []byte) bool
}

// sample is one request's outcome.
type sample struct {
	end     time.Time
	latency time.Duration
	ttfe    time.Duration // streams only: time to the first data line
	err     string        // empty when the request succeeded
}

// stats summarises a measurement.
type stats struct {
	n       int
	elapsed time.Duration
	// lat and ttfe are sorted ascending.
	lat, ttfe []time.Duration
	// errs counts failed requests by kind (an HTTP status, "transport",
	// "incomplete stream").
	errs map[string]int
}

func (s stats) rps() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.n) / s.elapsed.Seconds()
}

func (s stats) errors() int {
	n := 0
	for _, c := range s.errs {
		n += c
	}
	return n
}

// quantile returns the q-quantile (0..1) of sorted durations by the
// nearest-rank method; 0 when there are none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// newClient returns a client that keeps one connection to the target: each
// load-generating goroutine has its own, so N goroutines are N connections.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1,
		MaxIdleConnsPerHost: 1,
		MaxConnsPerHost:     1,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     16 << 10,
		ReadBufferSize:      16 << 10,
	}}
}

// measure runs conns closed-loop connections against t for warmup plus
// duration and returns the requests that completed within the duration
// after the warm-up. Requests still running at the end finish but are not
// counted. window, when set, is called with the start and end of the
// measured interval as each is reached.
func measure(ctx context.Context, t target, conns int, warmup, duration time.Duration, window func(start bool)) stats {
	begin := time.Now()
	from, to := begin.Add(warmup), begin.Add(warmup+duration)
	results := make([][]sample, conns)
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[c] = worker(ctx, t, to)
		}()
	}
	if window != nil {
		sleepUntil(ctx, from)
		window(true)
		sleepUntil(ctx, to)
		window(false)
	}
	wg.Wait()

	st := stats{elapsed: duration, errs: map[string]int{}}
	for _, rs := range results {
		for _, r := range rs {
			if r.end.Before(from) || r.end.After(to) {
				continue
			}
			if r.err != "" {
				st.errs[r.err]++
				continue
			}
			st.n++
			st.lat = append(st.lat, r.latency)
			if t.stream {
				st.ttfe = append(st.ttfe, r.ttfe)
			}
		}
	}
	slices.Sort(st.lat)
	slices.Sort(st.ttfe)
	return st
}

func sleepUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

// requests counts the requests of the run, for their bodies.
var requests atomic.Uint64

// worker sends requests one after the other until the deadline and returns
// their outcomes.
func worker(ctx context.Context, t target, deadline time.Time) []sample {
	client := newClient()
	defer client.CloseIdleConnections()
	out := make([]sample, 0, 4096)
	buf := make([]byte, 64<<10)
	last := make([]byte, 0, 1024)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		s := request(ctx, client, t, t.body(requests.Add(1)), buf, &last)
		out = append(out, s)
		if s.err != "" {
			// A service that refuses at once would otherwise be asked
			// as fast as the loop spins.
			time.Sleep(10 * time.Millisecond)
		}
	}
	return out
}

// request sends one request and reads its answer to the end. buf and last
// are scratch space reused across requests.
func request(ctx context.Context, client *http.Client, t target, body, buf []byte, last *[]byte) sample {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return sample{end: time.Now(), err: "request: " + err.Error()}
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return sample{end: time.Now(), err: "transport"}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return sample{end: time.Now(), err: strconv.Itoa(resp.StatusCode)}
	}
	if !t.stream {
		if _, err := io.CopyBuffer(io.Discard, resp.Body, buf); err != nil {
			return sample{end: time.Now(), err: "transport"}
		}
		end := time.Now()
		return sample{end: end, latency: end.Sub(start)}
	}
	var ttfe time.Duration
	*last = (*last)[:0]
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(buf, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if ttfe == 0 {
				ttfe = time.Since(start)
			}
			*last = append((*last)[:0], bytes.TrimSpace(data)...)
		}
	}
	end := time.Now()
	if err := sc.Err(); err != nil {
		return sample{end: end, err: "transport"}
	}
	if !t.done(*last) {
		return sample{end: end, err: "incomplete stream"}
	}
	return sample{end: end, latency: end.Sub(start), ttfe: ttfe}
}

// probe sends one request to t and returns its body, for the checks made
// before a measurement.
func probe(ctx context.Context, t target) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body(requests.Add(1))))
	if err != nil {
		return nil, err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("%s answered %d: %s", t.url, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

// dataLines returns the data of each event of a Server-Sent Events body.
func dataLines(body []byte) [][]byte {
	var out [][]byte
	for line := range bytes.Lines(body) {
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			out = append(out, bytes.TrimSpace(data))
		}
	}
	return out
}
