package runlog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/runlog"
	_ "github.com/companionhq/companion/internal/testkit"
)

// newPair returns two logs that share their runs: the writer's and the
// reader's. They are the same log in memory, and two instances through Redis.
type newPair func(t *testing.T) (writer, reader runlog.Log)

// testLog runs the behaviour every Log must have, writing runs through one
// log of a pair and reading them through the other.
func testLog(t *testing.T, pair newPair) {
	tests := []struct {
		name string
		fn   func(t *testing.T, w, r runlog.Log)
	}{
		{"GapFreeFromOne", testGapFreeFromOne},
		{"FollowFromTheMiddle", testFollowFromTheMiddle},
		{"FollowLive", testFollowLive},
		{"ConcurrentFollowers", testConcurrentFollowers},
		{"FollowAfterEnd", testFollowAfterEnd},
		{"ContextEndsFollow", testContextEndsFollow},
		{"MetaAndNotFound", testMetaAndNotFound},
		{"Cancel", testCancel},
		{"Readers", testReaders},
		{"ResumeAfterADroppedFollower", testResume},
		{"OpaqueData", testOpaqueData},
		{"MoreMarksABurst", testMoreMarksABurst},
		{"ValuesStayInTheProcess", testValuesStayInTheProcess},
		{"ValuesLastForFollowersOfTheEnd", testValuesLastForFollowersOfTheEnd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, r := pair(t)
			tt.fn(t, w, r)
		})
	}
}

// ctxFor returns a context that ends with the test, or after 20 seconds.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func start(t *testing.T, l runlog.Log, id string) runlog.Writer {
	t.Helper()
	w, err := l.Start(ctxFor(t), runlog.Meta{RunID: id, ThreadID: "thread-" + id, ResourceID: "user-1", Started: time.Unix(1_700_000_000, 123).UTC()})
	if err != nil {
		t.Fatalf("Start(%s): %v", id, err)
	}
	return w
}

// event is the data of a run's n-th event in these tests.
func event(n int) []byte { return fmt.Appendf(nil, `{"n":%d}`, n) }

func appendN(t *testing.T, w runlog.Writer, from, to int) {
	t.Helper()
	for n := from; n <= to; n++ {
		seq, err := w.Append(ctxFor(t), event(n), nil)
		if err != nil {
			t.Fatalf("Append #%d: %v", n, err)
		}
		if seq != int64(n) {
			t.Fatalf("Append #%d returned Seq %d", n, seq)
		}
	}
}

func end(t *testing.T, w runlog.Writer) {
	t.Helper()
	if err := w.End(ctxFor(t)); err != nil {
		t.Fatalf("End: %v", err)
	}
}

// collect reads a Follow to its end and returns the entries and the error
// yielded last, if any.
func collect(ctx context.Context, l runlog.Log, id string, after int64) ([]runlog.Entry, error) {
	var got []runlog.Entry
	for e, err := range l.Follow(ctx, id, after) {
		if err != nil {
			return got, err
		}
		got = append(got, e)
	}
	return got, nil
}

// wantEntries fails unless got holds the events from+1 to to, in order,
// each once.
func wantEntries(t *testing.T, got []runlog.Entry, from, to int) {
	t.Helper()
	if len(got) != max(to-from, 0) {
		t.Fatalf("got %d entries (%s), want Seq %d to %d", len(got), seqs(got), from+1, to)
	}
	for i, e := range got {
		n := from + 1 + i
		if e.Seq != int64(n) || string(e.Data) != string(event(n)) {
			t.Fatalf("entry %d is Seq %d %q, want Seq %d %q", i, e.Seq, e.Data, n, event(n))
		}
	}
}

func seqs(es []runlog.Entry) string {
	if len(es) > 12 {
		return fmt.Sprintf("%s ... %s", seqs(es[:6]), seqs(es[len(es)-6:]))
	}
	s := ""
	for _, e := range es {
		s += fmt.Sprintf(" %d", e.Seq)
	}
	return s
}

// eventually fails unless cond holds within 10 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testGapFreeFromOne(t *testing.T, w, r runlog.Log) {
	wr := start(t, w, "run-1")
	appendN(t, wr, 1, 5)
	end(t, wr)
	got, err := collect(ctxFor(t), r, "run-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries(t, got, 0, 5)
	if _, err := wr.Append(ctxFor(t), event(6), nil); !errors.Is(err, runlog.ErrEnded) {
		t.Fatalf("Append after End: %v, want ErrEnded", err)
	}
	end(t, wr) // a second End is a no-op
}

func testFollowFromTheMiddle(t *testing.T, w, r runlog.Log) {
	wr := start(t, w, "run-1")
	appendN(t, wr, 1, 10)
	end(t, wr)
	for _, after := range []int{0, 1, 4, 9, 10, 11, 1000, -3} {
		got, err := collect(ctxFor(t), r, "run-1", int64(after))
		if err != nil {
			t.Fatalf("after %d: %v", after, err)
		}
		wantEntries(t, got, min(max(after, 0), 10), 10)
	}
}

func testFollowLive(t *testing.T, w, r runlog.Log) {
	wr := start(t, w, "run-1")
	type result struct {
		got []runlog.Entry
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := collect(ctxFor(t), r, "run-1", 0)
		done <- result{got, err}
	}()
	eventually(t, "the follower is counted", func() bool { return wr.Readers() == 1 })
	for n := 1; n <= 50; n++ {
		appendN(t, wr, n, n)
		if n%10 == 0 {
			time.Sleep(2 * time.Millisecond) // let the follower catch up and wait
		}
	}
	select {
	case res := <-done:
		t.Fatalf("Follow returned before End: %s, %v", seqs(res.got), res.err)
	case <-time.After(20 * time.Millisecond):
	}
	end(t, wr)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	wantEntries(t, res.got, 0, 50)
}

func testConcurrentFollowers(t *testing.T, w, r runlog.Log) {
	const total = 300
	wr := start(t, w, "run-1")
	var wg sync.WaitGroup
	results := make([][]runlog.Entry, 8)
	errs := make([]error, 8)
	after := []int64{0, 0, 0, 5, 17, 100, 299, 300}
	follow := func(i int) {
		wg.Go(func() { results[i], errs[i] = collect(ctxFor(t), r, "run-1", after[i]) })
	}
	for i := range 4 {
		follow(i)
	}
	for n := 1; n <= total; n++ {
		appendN(t, wr, n, n)
		if n == 150 {
			for i := 4; i < 8; i++ {
				follow(i)
			}
		}
	}
	end(t, wr)
	wg.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("follower %d: %v", i, errs[i])
		}
		wantEntries(t, results[i], int(after[i]), total)
	}
}

func testFollowAfterEnd(t *testing.T, w, r runlog.Log) {
	wr := start(t, w, "run-1")
	end(t, wr)
	got, err := collect(ctxFor(t), r, "run-1", 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("Follow of a run ended without events: %s, %v", seqs(got), err)
	}

	wr = start(t, w, "run-2")
	appendN(t, wr, 1, 3)
	end(t, wr)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	got, err = collect(ctx, r, "run-2", 1)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries(t, got, 1, 3)
}

func testContextEndsFollow(t *testing.T, w, r runlog.Log) {
	wr := start(t, w, "run-1")
	appendN(t, wr, 1, 3)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var got []runlog.Entry
	go func() {
		var err error
		got, err = collect(ctx, r, "run-1", 0)
		done <- err
	}()
	eventually(t, "the follower is counted", func() bool { return wr.Readers() == 1 })
	time.Sleep(50 * time.Millisecond) // the follower reads what is there and waits
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Follow ended with %v, want context.Canceled", err)
		}
		wantEntries(t, got, 0, 3)
	case <-time.After(2 * time.Second):
		t.Fatal("Follow did not return within 2s of its context's end")
	}
	eventually(t, "the follower is no longer counted", func() bool { return wr.Readers() == 0 })

	// A context that has already ended yields its error and nothing else.
	got, err := collect(ctx, r, "run-1", 0)
	if !errors.Is(err, context.Canceled) || len(got) != 0 {
		t.Fatalf("Follow with an ended context: %s, %v", seqs(got), err)
	}
	end(t, wr)
}

func testMetaAndNotFound(t *testing.T, w, r runlog.Log) {
	ctx := ctxFor(t)
	want := runlog.Meta{RunID: "run-1", ThreadID: "thread-9", ResourceID: "user-1", Started: time.Date(2025, 3, 4, 5, 6, 7, 89, time.UTC)}
	wr, err := w.Start(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []runlog.Log{w, r} {
		got, err := l.Meta(ctx, "run-1")
		if err != nil || got.RunID != want.RunID || got.ThreadID != want.ThreadID || got.ResourceID != want.ResourceID || !got.Started.Equal(want.Started) {
			t.Fatalf("Meta: %+v, %v; want %+v", got, err, want)
		}
	}
	if _, err := w.Start(ctx, want); err == nil {
		t.Fatal("a second Start with the same RunID succeeded")
	}
	end(t, wr)

	if m, err := r.Meta(ctx, "run-unknown"); !errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("Meta of an unknown run: %+v, %v", m, err)
	}
	if got, err := collect(ctx, r, "run-unknown", 0); !errors.Is(err, runlog.ErrNotFound) || len(got) != 0 {
		t.Fatalf("Follow of an unknown run: %s, %v", seqs(got), err)
	}
	if err := r.Cancel(ctx, "run-unknown"); !errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("Cancel of an unknown run: %v", err)
	}
}

func testCancel(t *testing.T, w, r runlog.Log) {
	ctx := ctxFor(t)
	wr := start(t, w, "run-1")
	select {
	case <-wr.Cancelled().Done():
		t.Fatal("Cancelled is closed before Cancel")
	default:
	}
	if err := r.Cancel(ctx, "run-1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wr.Cancelled().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Cancelled is not closed 5s after Cancel")
	}
	if err := r.Cancel(ctx, "run-1"); err != nil {
		t.Fatalf("a second Cancel: %v", err)
	}
	appendN(t, wr, 1, 1) // a cancelled run still writes its last events
	end(t, wr)

	wr = start(t, w, "run-2")
	end(t, wr)
	if err := r.Cancel(ctx, "run-2"); err != nil {
		t.Fatalf("Cancel of an ended run: %v, want nil", err)
	}
	time.Sleep(20 * time.Millisecond)
	select {
	case <-wr.Cancelled().Done():
		t.Fatal("Cancel of an ended run closed its Cancelled")
	default:
	}
}

func testReaders(t *testing.T, w, r runlog.Log) {
	wr := start(t, w, "run-1")
	if n := wr.Readers(); n != 0 {
		t.Fatalf("Readers() = %d before any Follow", n)
	}
	ctx1, cancel1 := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := range 3 {
		ctx := ctxFor(t)
		if i == 0 {
			ctx = ctx1
		}
		wg.Go(func() { _, _ = collect(ctx, r, "run-1", 0) })
	}
	eventually(t, "3 readers", func() bool { return wr.Readers() == 3 })
	cancel1()
	eventually(t, "2 readers once one left", func() bool { return wr.Readers() == 2 })
	end(t, wr)
	wg.Wait()
	eventually(t, "no readers once the run ended", func() bool { return wr.Readers() == 0 })
}

// testResume drops a follower on one log after k entries, and resumes after
// k on the other while the run goes on: the two get every entry once.
func testResume(t *testing.T, w, r runlog.Log) {
	const total, k = 200, 37
	wr := start(t, w, "run-1")
	var first []runlog.Entry
	firstDone := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctxFor(t))
	go func() {
		for e, err := range w.Follow(ctx, "run-1", 0) {
			if err != nil {
				firstDone <- err
				return
			}
			first = append(first, e)
			if len(first) == k {
				cancel() // the connection dropped
			}
		}
		firstDone <- nil
	}()
	appendN(t, wr, 1, 100)
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the dropped follower ended with %v", err)
	}
	wantEntries(t, first, 0, k)

	resumed := make(chan []runlog.Entry, 1)
	go func() {
		got, err := collect(ctxFor(t), r, "run-1", first[len(first)-1].Seq)
		if err != nil {
			t.Errorf("resumed follower: %v", err)
		}
		resumed <- got
	}()
	appendN(t, wr, 101, total)
	end(t, wr)
	all := append(first, <-resumed...)
	wantEntries(t, all, 0, total)
}

func testOpaqueData(t *testing.T, w, r runlog.Log) {
	data := [][]byte{{}, {0, 0xff, 0xfe, '\n', '\r'}, []byte("data: x\n\n"), bytes.Repeat([]byte{0x80}, 70_000)}
	wr := start(t, w, "run-1")
	for _, d := range data {
		if _, err := wr.Append(ctxFor(t), d, nil); err != nil {
			t.Fatal(err)
		}
	}
	end(t, wr)
	got, err := collect(ctxFor(t), r, "run-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(data) {
		t.Fatalf("got %d entries, want %d", len(got), len(data))
	}
	for i, e := range got {
		if e.Seq != int64(i+1) || !bytes.Equal(e.Data, data[i]) {
			t.Fatalf("entry %d: Seq %d, %d bytes; want Seq %d, %q", i, e.Seq, len(e.Data), i+1, data[i][:min(len(data[i]), 10)])
		}
	}
}

// testMoreMarksABurst: entries a follower reads together carry More, all
// but the last of them, so that a reader can send them in one write; the
// last entry of a run never does.
func testMoreMarksABurst(t *testing.T, w, r runlog.Log) {
	wr := start(t, w, "run-1")
	appendN(t, wr, 1, 4)
	end(t, wr)
	got, err := collect(ctxFor(t), r, "run-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries(t, got, 0, 4)
	var more []bool
	for _, e := range got {
		more = append(more, e.More)
	}
	if want := []bool{true, true, true, false}; fmt.Sprint(more) != fmt.Sprint(want) {
		t.Fatalf("More %v, want %v", more, want)
	}
}

// testValuesStayInTheProcess: while a run goes on, the value handed to
// Append comes back, the same value, to a follower of the log it was
// written to; a follower on another instance, or any after the run's end,
// gets the data alone.
func testValuesStayInTheProcess(t *testing.T, w, r runlog.Log) {
	wr := start(t, w, "run-values")
	values := []*int{new(int), nil, new(int)}
	for i, v := range values {
		var value any
		if v != nil {
			*v = i + 1
			value = v
		}
		if _, err := wr.Append(ctxFor(t), event(i+1), value); err != nil {
			t.Fatalf("Append #%d: %v", i+1, err)
		}
	}
	check := func(l runlog.Log, withValues bool) {
		t.Helper()
		var got []runlog.Entry
		for e, err := range l.Follow(ctxFor(t), "run-values", 0) {
			if err != nil {
				t.Fatalf("Follow: %v", err)
			}
			if got = append(got, e); len(got) == len(values) {
				break // the run may go on
			}
		}
		wantEntries(t, got, 0, len(values))
		for i, e := range got {
			want := any(nil)
			if withValues && values[i] != nil {
				want = values[i]
			}
			if e.Value != want {
				t.Errorf("entry %d: Value %v, want %v (values expected: %v)", e.Seq, e.Value, want, withValues)
			}
		}
	}
	check(w, true)
	check(r, r == w)
	end(t, wr)
	check(w, false)
	check(r, false)
}

// testValuesLastForFollowersOfTheEnd: a follower that began before the
// run's end still gets the values of the entries it reads after it (a
// stream behind a fast model); once it stops, the values are gone.
func testValuesLastForFollowersOfTheEnd(t *testing.T, w, r runlog.Log) {
	wr := start(t, w, "run-behind")
	one, two := new(int), new(int)
	if _, err := wr.Append(ctxFor(t), event(1), one); err != nil {
		t.Fatal(err)
	}
	type result struct {
		got []runlog.Entry
		err error
	}
	read, resume, done := make(chan struct{}), make(chan struct{}), make(chan result)
	go func() {
		var res result
		for e, err := range w.Follow(ctxFor(t), "run-behind", 0) {
			if err != nil {
				res.err = err
				break
			}
			if res.got = append(res.got, e); len(res.got) == 1 {
				read <- struct{}{}
				<-resume
			}
		}
		done <- res
	}()
	<-read
	if _, err := wr.Append(ctxFor(t), event(2), two); err != nil {
		t.Fatal(err)
	}
	end(t, wr)
	close(resume)
	res := <-done
	if res.err != nil {
		t.Fatalf("Follow: %v", res.err)
	}
	wantEntries(t, res.got, 0, 2)
	for i, want := range []*int{one, two} {
		if res.got[i].Value != any(want) {
			t.Errorf("entry %d read by a follower of the end: Value %v, want %v", i+1, res.got[i].Value, want)
		}
	}
	// Its follower gone, the ended run keeps its bytes alone.
	for _, l := range []runlog.Log{w, r} {
		got, err := collect(ctxFor(t), l, "run-behind", 0)
		if err != nil {
			t.Fatalf("Follow after the end: %v", err)
		}
		wantEntries(t, got, 0, 2)
		for _, e := range got {
			if e.Value != nil {
				t.Errorf("entry %d after the end and its followers: Value %v, want none", e.Seq, e.Value)
			}
		}
	}
}
