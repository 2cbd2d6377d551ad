package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/companionhq/companion/internal/client"
)

// Timing of a stop.
const (
	// cancelTimeout bounds the request that cancels a run.
	cancelTimeout = 5 * time.Second
	// runIDWait is how long a reply stopped before its first event is
	// still read for the run's id, to cancel it. Past it the connection is
	// closed, and the service cancels the run once its resume grace ends.
	runIDWait = time.Minute
	// healthTimeout bounds the check that the service is there.
	healthTimeout = 10 * time.Second
)

// chatCommand is `companion chat`: a conversation with a running service
// on the terminal.
func chatCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, rest, err := parseClientFlags("chat", "chat", "chat [flags]", args, getenv, stdout, stderr, nil)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "companion chat: unexpected argument %q (to send one message, use companion ask)\n", rest[0])
		return errUsage
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	hctx, cancel := context.WithTimeout(ctx, healthTimeout)
	err = c.Health(hctx)
	cancel()
	if err != nil {
		return err
	}
	// Ctrl-C is the chat's own: it stops a reply, and quits at the prompt.
	// The context run was given ends at the first one, so the chat runs
	// without its cancellation and hears the signals itself.
	interrupts := make(chan os.Signal, 4)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupts)
	ch := &chat{
		c:          c,
		flags:      f,
		lines:      readLines(os.Stdin),
		interrupts: interrupts,
		prompt:     isTerminal(os.Stdin),
		screen: screen{out: stdout, notes: stdout, cutShort: true,
			color: isTerminal(stdout) && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"},
	}
	return ch.run(context.WithoutCancel(ctx))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// readLines sends the lines of r, without their line ends, and closes the
// channel at the end of r.
func readLines(r io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				lines <- strings.TrimRight(line, "\r\n")
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}

// chat is one terminal conversation.
type chat struct {
	c     *client.Client
	flags clientFlags
	// lines are the user's lines; interrupts are Ctrl-C (os.Interrupt)
	// and SIGTERM.
	lines      <-chan string
	interrupts <-chan os.Signal
	// prompt shows a prompt before each line (the input is a terminal).
	prompt bool
	// The reply, and the chat's own notes, on one output, coloured when
	// it is a terminal.
	screen
}

// ANSI styles of the notes, used on a terminal only.
const (
	styleDim    = "\x1b[2m"
	styleBold   = "\x1b[1m"
	styleRed    = "\x1b[31m"
	styleYellow = "\x1b[33m"
	styleReset  = "\x1b[0m"
)

const chatHelp = `Commands:
  /new                start a new thread
  /personality NAME   answer as guru, wanderer, friend or philosopher
  /thread [ID]        show the thread's id, or go on with thread ID
  /memory             show what the companion knows of you
  /memory add TEXT    add a line to it
  /memory set         replace it with the lines you type next (a line with
                      only . ends them)
  /search WORDS       find your past messages (and the replies) with WORDS
  /forget             erase everything kept about you, after you type yes
  /help               show this
  /quit               quit (so do Ctrl-D, and Ctrl-C at the prompt)
Ctrl-C while a reply streams stops it.
`

// run is the read-eval loop: prompt, send, stream the reply; until /quit,
// the end of the input, or Ctrl-C at the prompt.
func (ch *chat) run(ctx context.Context) error {
	ch.note(styleDim, fmt.Sprintf("companion chat at %s, as %s", ch.c.BaseURL, ch.flags.personality))
	ch.note(styleDim, fmt.Sprintf("thread %s (continue it later with --thread %s); /help for commands", ch.flags.thread, ch.flags.thread))
	for {
		if ch.prompt {
			ch.printf(styleBold, "you> ")
		}
		var line string
		select {
		case l, ok := <-ch.lines:
			if !ok {
				ch.endQuit()
				return nil
			}
			line = strings.TrimSpace(l)
		case <-ch.interrupts:
			ch.endQuit()
			return nil
		}
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "/"):
			if ch.command(ctx, line) {
				return nil
			}
		default:
			if ch.turn(ctx, line) {
				return nil
			}
		}
	}
}

// endQuit ends the prompt's line on the way out.
func (ch *chat) endQuit() {
	if ch.prompt {
		fmt.Fprintln(ch.out)
	}
}

// command runs a /command and reports whether it quits.
func (ch *chat) command(ctx context.Context, line string) (quit bool) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/quit", "/exit":
		return true
	case "/help":
		fmt.Fprint(ch.out, chatHelp)
	case "/new":
		ch.flags.thread = newThreadID("chat")
		ch.note(styleDim, "new thread "+ch.flags.thread)
	case "/thread":
		if arg != "" {
			ch.flags.thread = arg
		}
		ch.note(styleDim, "thread "+ch.flags.thread)
	case "/personality":
		if arg == "" {
			ch.note(styleDim, fmt.Sprintf("personality %s (one of %s)", ch.flags.personality, strings.Join(personalities, ", ")))
			break
		}
		if err := checkPersonality(arg); err != nil {
			ch.note(styleRed, "error: "+err.Error())
			break
		}
		ch.flags.personality = arg
		ch.note(styleDim, "personality "+arg)
	case "/memory":
		return ch.memory(ctx, arg)
	case "/search":
		ch.search(ctx, arg)
	case "/forget":
		return ch.forget(ctx)
	default:
		ch.note(styleRed, fmt.Sprintf("unknown command %s: /help lists them", name))
	}
	return false
}

// item is what the stream's reader hands the loop: an event or the error
// that ends the stream.
type item struct {
	ev  client.Event
	err error
}

// turn sends text and shows the reply as it streams. Ctrl-C stops the
// reply (the run is cancelled) and returns to the prompt; a second one
// while stopping, or SIGTERM, quits.
func (ch *chat) turn(ctx context.Context, text string) (quit bool) {
	req := ch.flags.request(text)
	rctx, cancel := context.WithCancel(ctx)
	items := make(chan item)
	go func() {
		defer close(items)
		send := func(it item) bool {
			select {
			case items <- it:
				return true
			case <-rctx.Done():
				return false
			}
		}
		s, err := ch.c.Stream(rctx, req)
		if err != nil {
			send(item{err: err})
			return
		}
		defer s.Close()
		for ev, err := range s.Events() {
			if !send(item{ev: ev, err: err}) || err != nil {
				return
			}
		}
	}()
	runID := ""
	for {
		select {
		case it, ok := <-items:
			if !ok {
				ch.endLine()
				cancel()
				return false
			}
			if it.err != nil {
				ch.endLine()
				ch.note(styleRed, "error: "+it.err.Error())
				cancel()
				return false
			}
			if it.ev.RunID != "" {
				runID = it.ev.RunID
			}
			if e := ch.show(it.ev); e != nil {
				ch.note(styleRed, "error: "+e.Message)
			}
		case sig := <-ch.interrupts:
			ch.endLine()
			return ch.stop(runID, items, cancel, sig != os.Interrupt)
		}
	}
}

// stop stops the reply in progress: it cancels the run, then closes its
// stream. A run the service has not named yet (its first event waits for
// the model's first token) is cancelled once its id arrives, behind the
// prompt. quit is true for SIGTERM, or a second Ctrl-C while stopping.
func (ch *chat) stop(runID string, items <-chan item, closeStream context.CancelFunc, quit bool) bool {
	if runID == "" {
		go func() {
			defer closeStream()
			timeout := time.NewTimer(runIDWait)
			defer timeout.Stop()
			for {
				select {
				case it, ok := <-items:
					if !ok || it.err != nil {
						return
					}
					if it.ev.RunID != "" {
						_ = ch.cancelRun(it.ev.RunID)
						return
					}
				case <-timeout.C:
					return
				}
			}
		}()
		if !quit {
			ch.note(styleYellow, "stopped")
		}
		return quit
	}
	defer closeStream()
	done := make(chan error, 1)
	go func() { done <- ch.cancelRun(runID) }()
	select {
	case err := <-done:
		if err != nil {
			ch.note(styleRed, "error: the run could not be stopped: "+err.Error())
		}
	case <-ch.interrupts:
		// Quit, giving the cancel a moment to arrive.
		select {
		case <-done:
		case <-time.After(time.Second):
		}
		return true
	}
	if !quit {
		ch.note(styleYellow, "stopped")
	}
	return quit
}

func (ch *chat) cancelRun(runID string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	return ch.c.Cancel(ctx, runID, ch.flags.resource)
}

// compactJSON is b on one line.
func compactJSON(b json.RawMessage) string {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var v any
	if json.Unmarshal(b, &v) != nil || enc.Encode(v) != nil {
		return string(b)
	}
	return strings.TrimSpace(buf.String())
}

// summarize is a tool result in a few words: the weather as "3.2°C
// overcast in Berlin", anything else as its JSON, clipped.
func summarize(result json.RawMessage) string {
	var w struct {
		Temperature *float64 `json:"temperature"`
		Conditions  string   `json:"conditions"`
		Location    string   `json:"location"`
	}
	if json.Unmarshal(result, &w) == nil && w.Temperature != nil && w.Location != "" {
		s := strconv.FormatFloat(*w.Temperature, 'f', -1, 64) + "°C"
		if w.Conditions != "" {
			s += " " + strings.ToLower(w.Conditions)
		}
		return s + " in " + w.Location
	}
	s := compactJSON(result)
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100]) + "…"
	}
	return s
}
