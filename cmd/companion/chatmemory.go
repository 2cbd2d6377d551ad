package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// The chat's commands about what the service keeps of the person: /memory
// (what the companion knows of them: shown, added to, replaced), /search
// over their past conversations, and /forget, which erases all of it.

const (
	// memoryTimeout bounds the requests of a memory command.
	memoryTimeout = 30 * time.Second
	// searchLimit is how many messages /search shows.
	searchLimit = 10
	// searchClip is how much of a message found /search shows, in runes.
	searchClip = 200
)

// errInterrupted is Ctrl-C while a command waits for a line.
var errInterrupted = errors.New("interrupted")

// readLine reads the next line typed, after prompt on a terminal. It
// returns errInterrupted for Ctrl-C, and io.EOF when the input ended or
// SIGTERM came: the chat quits.
func (ch *chat) readLine(prompt string) (string, error) {
	if ch.prompt {
		ch.printf(styleBold, prompt)
	}
	select {
	case l, ok := <-ch.lines:
		if !ok {
			ch.endQuit()
			return "", io.EOF
		}
		return l, nil
	case sig := <-ch.interrupts:
		ch.endQuit()
		if sig != os.Interrupt {
			return "", io.EOF
		}
		return "", errInterrupted
	}
}

// memory runs /memory, /memory add TEXT and /memory set [TEXT], and reports
// whether the chat quits.
func (ch *chat) memory(ctx context.Context, arg string) (quit bool) {
	sub, text, _ := strings.Cut(arg, " ")
	text = strings.TrimSpace(text)
	switch sub {
	case "":
		ch.showMemory(ctx)
	case "add":
		if text == "" {
			ch.note(styleRed, "error: /memory add needs the text to add, such as /memory add Likes: the sea")
			break
		}
		ch.addMemory(ctx, text)
	case "set":
		return ch.setMemory(ctx, text)
	default:
		ch.note(styleRed, fmt.Sprintf("unknown command /memory %s: /memory shows it, /memory add TEXT and /memory set change it", sub))
	}
	return false
}

// showMemory shows what the companion knows of the person.
func (ch *chat) showMemory(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	wm, err := ch.c.WorkingMemory(rctx, ch.flags.thread, ch.flags.resource)
	if err != nil {
		ch.note(styleRed, "error: "+err.Error())
		return
	}
	if wm.WorkingMemory == nil || strings.TrimSpace(*wm.WorkingMemory) == "" {
		ch.note(styleDim, "nothing kept yet: the companion fills this in as it learns about you (/memory add TEXT adds a line)")
		return
	}
	fmt.Fprintln(ch.out, strings.TrimRight(*wm.WorkingMemory, "\n"))
	whose := ""
	if wm.Source == "thread" {
		whose = ", of this thread only"
	}
	ch.note(styleDim, fmt.Sprintf("(version %d, changed %s%s; /memory add TEXT or /memory set changes it)", wm.Version, localTime(wm.UpdatedAt), whose))
}

// addMemory adds a line to what the companion knows of the person.
func (ch *chat) addMemory(ctx context.Context, text string) {
	rctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	wm, err := ch.c.WorkingMemory(rctx, ch.flags.thread, ch.flags.resource)
	if err != nil {
		ch.note(styleRed, "error: "+err.Error())
		return
	}
	if wm.WorkingMemoryTemplate.Format == "json" {
		ch.note(styleRed, "error: what the companion knows follows a schema here: /memory set it as a JSON object")
		return
	}
	current := ""
	if wm.WorkingMemory != nil {
		current = *wm.WorkingMemory
	}
	if current != "" {
		current = strings.TrimRight(current, "\n") + "\n"
	}
	ch.storeMemory(rctx, current+"- "+text+"\n")
}

// setMemory replaces what the companion knows of the person with text, or
// when there is none, with the lines typed next up to a line with only ".".
func (ch *chat) setMemory(ctx context.Context, text string) (quit bool) {
	if text == "" {
		ch.note(styleDim, "type what the companion should know of you; a line with only . ends it (Ctrl-C keeps what it knows)")
		var lines []string
		for {
			l, err := ch.readLine("... ")
			if err != nil {
				ch.note(styleDim, "nothing changed")
				return errors.Is(err, io.EOF)
			}
			if strings.TrimSpace(l) == "." {
				break
			}
			lines = append(lines, l)
		}
		if len(lines) > 0 {
			text = strings.Join(lines, "\n")
		}
	}
	if text != "" {
		text += "\n"
	}
	rctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	ch.storeMemory(rctx, text)
	return false
}

func (ch *chat) storeMemory(ctx context.Context, content string) {
	up, err := ch.c.SetWorkingMemory(ctx, ch.flags.thread, ch.flags.resource, content)
	if err != nil {
		ch.note(styleRed, "error: "+err.Error())
		return
	}
	ch.note(styleDim, fmt.Sprintf("kept (version %d)", up.Version))
}

// search shows the past messages that match words, best first, each with
// its date and its thread.
func (ch *chat) search(ctx context.Context, words string) {
	if words == "" {
		ch.note(styleRed, "error: /search needs the words to look for, such as /search sister")
		return
	}
	rctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	found, err := ch.c.Search(rctx, ch.flags.resource, words, searchLimit)
	if err != nil {
		ch.note(styleRed, "error: "+err.Error())
		return
	}
	if len(found.Results) == 0 {
		ch.note(styleDim, fmt.Sprintf("nothing found for %q", words))
		return
	}
	ch.note(styleDim, fmt.Sprintf("%s found for %q, best first:", count(len(found.Results), "message", "messages"), words))
	for i, r := range found.Results {
		who := "you"
		if r.Role != "user" {
			who = "companion"
		}
		title := r.ThreadTitle
		if title == "" {
			title = "untitled"
		}
		fmt.Fprintf(ch.out, "%d. %s in %q (thread %s)\n   %s: %s\n", i+1, localTime(r.CreatedAt), title, r.ThreadID, who, clipRunes(strings.Join(strings.Fields(r.Content), " "), searchClip))
	}
	ch.note(styleDim, "(/thread ID goes on with a thread)")
}

// forget erases everything kept about the person, once they typed yes.
func (ch *chat) forget(ctx context.Context) (quit bool) {
	rid := ch.flags.resource
	if rid == "" {
		ch.note(styleRed, "error: /forget erases the memory of the resource the chat is for: start the chat with --resource (or COMPANION_RESOURCE)")
		return false
	}
	ch.note(styleYellow, fmt.Sprintf("This erases everything kept about %s: every thread, every message, and what the companion knows of you (a safety setting the operator made, such as a minor's mark, stays). It cannot be undone. Type yes to go on.", rid))
	answer, err := ch.readLine("forget everything? ")
	if err != nil || !strings.EqualFold(strings.TrimSpace(answer), "yes") {
		ch.note(styleDim, "nothing was forgotten")
		return errors.Is(err, io.EOF)
	}
	rctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	erased, err := ch.c.EraseResource(rctx, rid)
	if err != nil {
		ch.note(styleRed, "error: "+err.Error())
		return false
	}
	ch.note(styleYellow, fmt.Sprintf("forgotten: %s, %s, and what the companion knew of you", count(int(erased.Threads), "thread", "threads"), count(int(erased.Messages), "message", "messages")))
	// The thread is gone with the rest.
	ch.flags.thread = newThreadID("chat")
	ch.note(styleDim, "new thread "+ch.flags.thread)
	return false
}

// count is n and the noun for it.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// localTime is an API timestamp as a local date and time, or as it came
// when it does not parse.
func localTime(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ts
	}
	return t.Local().Format("2006-01-02 15:04")
}

// clipRunes is s cut to n runes, with an ellipsis when it was longer.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
