package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// askCommand is `companion ask "message"`: one message to a running
// service, its reply on stdout, and exit. The reply streams as it comes,
// with tool calls and tool errors as notes on stderr; with --json it is
// the generate response body. A new thread's id goes to stderr first, to
// go on with it through --thread. A run that fails is an error (exit 1).
func askCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var asJSON bool
	f, rest, err := parseClientFlags("ask", "ask", `ask [flags] "message"   (or - to read the message from stdin)`, args, getenv, stdout, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print the generate response body (JSON) instead of the reply's text")
	})
	if err != nil {
		return err
	}
	text := strings.Join(rest, " ")
	if text == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return fmt.Errorf("reading the message from stdin: %w", err)
		}
		text = string(b)
	}
	if strings.TrimSpace(text) == "" {
		fmt.Fprintln(stderr, `companion ask: no message: companion ask "How do I start my day well?"`)
		return errUsage
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	if f.fresh {
		// On stderr, so that stdout stays the reply alone.
		fmt.Fprintf(stderr, "thread: %s (continue it with --thread %s)\n", f.thread, f.thread)
	}
	if asJSON {
		body, err := c.GenerateBody(ctx, f.request(text))
		if err != nil {
			return err
		}
		if _, err := stdout.Write(body); err != nil {
			return err
		}
		if !strings.HasSuffix(string(body), "\n") {
			fmt.Fprintln(stdout)
		}
		return nil
	}

	s, err := c.Stream(ctx, f.request(text))
	if err != nil {
		return err
	}
	defer s.Close()
	var failed error
	sc := screen{out: stdout, notes: stderr}
	defer sc.endLine()
	for ev, err := range s.Events() {
		if err != nil {
			if ctx.Err() == nil {
				return err
			}
			// Interrupted: stop the run too, or it would go on for the
			// service's resume grace.
			if s.RunID() != "" {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
				defer cancel()
				if cerr := c.Cancel(cctx, s.RunID(), f.resource); cerr != nil {
					return fmt.Errorf("interrupted, and the run could not be stopped: %w", cerr)
				}
			}
			return errors.New("interrupted")
		}
		if e := sc.show(ev); e != nil {
			failed = fmt.Errorf("%s (%s)", e.Message, e.Code)
		}
	}
	return failed
}
