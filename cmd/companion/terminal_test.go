package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/companionhq/companion/fakes/openmeteo"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/testkit"
)

// tokenDelay is the fake model's pace in these tests: slow enough to
// press Ctrl-C in the middle of a reply.
const tokenDelay = 50 * time.Millisecond

// buildCompanion builds the command into a temporary directory.
func buildCompanion(t *testing.T) string {
	t.Helper()
	return filepath.Join(buildAll(t), "companion")
}

// stamp is the version and commit the tests' binaries are built with, as
// `make build` stamps them.
const stamp = "-X main.version=v9.8.7-test -X main.commit=0123abcd"

// buildAll builds companion and fakes once for all the tests of the
// package, and returns their folder.
func buildAll(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	return testkit.Build(t, ".", stamp, ".", "../../fakes/cmd/fakes")
}

// serveForTerminal starts `companion serve` on a free port, on a fresh
// SQLite database, with the weather tool on a fake Open-Meteo and the fake
// model at tokenDelay.
func serveForTerminal(t *testing.T, bin string) *proc {
	t.Helper()
	om := httptest.NewServer(openmeteo.New())
	t.Cleanup(om.Close)
	return startProc(t, bin,
		"COMPANION_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "companion.db"),
		"COMPANION_WEATHER_GEOCODING_URL="+om.URL, "COMPANION_WEATHER_FORECAST_URL="+om.URL,
		"COMPANION_FAKE_TOKEN_DELAY="+tokenDelay.String())
}

// clientEnv is the environment of a client process: the test's, without
// the chat's own settings, with these added.
func clientEnv(add ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COMPANION_") && !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "TERM=") {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}

// terminal is a process on a pseudo-terminal: what it shows, and a
// keyboard.
type terminal struct {
	t    *testing.T
	pty  *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	raw  bytes.Buffer
	seen int // how much of the screen expect has gone past
	done chan struct{}
	err  error
}

func startTerminal(t *testing.T, bin string, env []string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, pty: f, cmd: cmd, done: make(chan struct{})}
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.raw.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return // EIO once the process has gone
			}
		}
	}()
	go func() {
		term.err = cmd.Wait()
		<-read
		close(term.done)
	}()
	t.Cleanup(func() {
		select {
		case <-term.done:
		default:
			_ = cmd.Process.Kill()
			<-term.done
		}
		f.Close()
	})
	return term
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// screen is what the terminal showed, as text: without colours, and with
// the terminal's CRLF line ends as "\n".
func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return strings.ReplaceAll(ansi.ReplaceAllString(term.raw.String(), ""), "\r\n", "\n")
}

func (term *terminal) rawScreen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.raw.String()
}

// expect waits until s shows after what earlier expects went past, and
// goes past it.
func (term *terminal) expect(s string) {
	term.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		scr := term.screen()
		if i := strings.Index(scr[term.seen:], s); i >= 0 {
			term.seen += i + len(s)
			return
		}
		select {
		case <-term.done:
			term.t.Fatalf("the process ended (%v) before showing %q; the screen:\n%s", term.err, s, term.screen())
		default:
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the screen never showed %q:\n%s", s, scr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// typeLine types s and Enter.
func (term *terminal) typeLine(s string) {
	term.t.Helper()
	if _, err := term.pty.Write([]byte(s + "\r")); err != nil {
		term.t.Fatal(err)
	}
}

// press sends keys: "\x03" is Ctrl-C, "\x04" Ctrl-D.
func (term *terminal) press(keys string) {
	term.t.Helper()
	if _, err := term.pty.Write([]byte(keys)); err != nil {
		term.t.Fatal(err)
	}
}

// exited waits for the process to end and checks its exit status is 0.
func (term *terminal) exited() {
	term.t.Helper()
	select {
	case <-term.done:
	case <-time.After(20 * time.Second):
		term.t.Fatalf("the process did not exit; the screen:\n%s", term.screen())
	}
	if term.err != nil {
		term.t.Fatalf("exit: %v; the screen:\n%s", term.err, term.screen())
	}
}

// TestTerminalClients runs the built command's clients against the built
// service, as people and scripts use them: chat on a pseudo-terminal, ask
// from a script.
func TestTerminalClients(t *testing.T) {
	bin := buildCompanion(t)
	svc := serveForTerminal(t, bin)
	t.Run("chat", func(t *testing.T) { testChatInTerminal(t, bin, svc) })
	t.Run("chat quits", func(t *testing.T) { testChatQuits(t, bin, svc) })
	t.Run("chat memory", func(t *testing.T) { testChatMemory(t, bin, svc) })
	t.Run("ask", func(t *testing.T) { testAsk(t, bin, svc) })
}

// testChatInTerminal drives `companion chat` through a pseudo-terminal as
// a user would: a reply streams in, a second turn recalls the first, a
// weather question shows its tool call, Ctrl-C stops a reply and gives the
// prompt back, Ctrl-C twice quits.
func testChatInTerminal(t *testing.T, bin string, svc *proc) {
	term := startTerminal(t, bin, clientEnv("COMPANION_URL="+svc.url, "COMPANION_RESOURCE=u1", "TERM=xterm-256color"), "chat")

	term.expect("companion chat at " + svc.url + ", as friend\n")
	term.expect("thread chat-")
	thread := "chat-" + term.screen()[term.seen:term.seen+12]
	term.expect(" (continue it later with --thread " + thread + "); /help for commands\nyou> ")

	// A reply streams in: its first words show well before its last.
	term.typeLine("Hi, I'm Sam and I love the sea.")
	term.expect("Hi, I'm Sam and I love the sea.\n") // the terminal's echo
	// A new thread: the reply is told to be an AI's first, on a line of
	// its own.
	term.expect(disclosureLine + "Hey,")
	first := time.Now()
	term.expect(`it's really good to hear from you! You asked: "Hi, I'm Sam and I love the sea." Honestly, I think you've got this, and I'm right here with you whatever happens. How are you feeling about it all?` + "\nyou> ")
	if d := time.Since(first); d < 20*tokenDelay {
		t.Errorf("the reply showed all at once (in %v), not as it streamed", d)
	}

	// The thread keeps the conversation.
	term.typeLine("What should I do this weekend?")
	term.expect(`You asked: "What should I do this weekend?" Earlier you mentioned: "Hi, I'm Sam and I love the sea."`)
	term.expect("\nyou> ")

	// A tool call and its result, then the answer.
	term.typeLine("What's the weather in Berlin?")
	term.expect("What's the weather in Berlin?\n⚙ weatherTool {\"location\":\"Berlin\"}\n→ 3.2°C overcast in Berlin\n" +
		"Okay, I looked it up for you! In Berlin it is 3.2°C (feels like -0.4°C) with overcast, humidity 81%, wind 14.8 km/h and gusts up to 29.5 km/h. Take care out there, and tell me how your day goes!\nyou> ")

	// Ctrl-C in the middle of a long reply stops it.
	long := "Tell me a long story about the sea, the wind, the lighthouse keeper and her cat, and the storm that came one night in November."
	term.typeLine(long)
	term.expect("You asked:")
	term.press("\x03")
	term.expect("stopped\nyou> ")
	stoppedAt := term.seen
	// The run was cancelled: the thread keeps the message, unanswered, and
	// none of the reply.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ms := svc.messages(t, thread, "u1")
		last := ms[len(ms)-1]
		if rolesOf(ms) == "user assistant user assistant user assistant user" && last.Metadata.Pending && apitest.PartsText(last) == long {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the stop the thread holds %s, last %+v", rolesOf(ms), last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(10 * tokenDelay)
	if rest := term.screen()[stoppedAt:]; rest != "" {
		t.Fatalf("the reply went on after the stop: %q", rest)
	}

	// Colour on a terminal: the notes are styled.
	if !strings.Contains(term.rawScreen(), "\x1b[2m⚙ weatherTool") || !strings.Contains(term.rawScreen(), "\x1b[33mstopped\x1b[0m") ||
		!strings.Contains(term.rawScreen(), "\x1b[2m[AI] You are talking to an AI companion") {
		t.Errorf("no colour on a terminal:\n%q", term.rawScreen())
	}

	// Ctrl-C twice, quickly, in a reply: stop and quit, with status 0.
	term.typeLine("And what happened after the storm?")
	term.expect(`Earlier you mentioned: "` + long[:40])
	term.press("\x03")
	time.Sleep(150 * time.Millisecond)
	term.press("\x03")
	term.exited()

	t.Logf("the session:\n%s", term.screen())
}

// testChatQuits: Ctrl-C at the prompt quits, and so does Ctrl-D; a thread
// given with --thread goes on.
func testChatQuits(t *testing.T, bin string, svc *proc) {
	env := clientEnv("TERM=xterm-256color", "NO_COLOR=1")

	term := startTerminal(t, bin, env, "chat", "--url", svc.url, "--thread", "mine", "--resource", "u1", "--personality", "guru")
	term.expect("as guru\nthread mine (continue it later with --thread mine)")
	term.expect("you> ")
	term.typeLine("Think of the lighthouse.")
	term.expect(`You ask: "Think of the lighthouse."`)
	term.expect("you> ")
	term.press("\x03")
	term.exited()
	if strings.Contains(term.rawScreen(), "\x1b[") {
		t.Errorf("colour with NO_COLOR set:\n%q", term.rawScreen())
	}

	term = startTerminal(t, bin, env, "chat", "--url", svc.url, "--thread", "mine", "--resource", "u1", "--personality", "guru")
	term.expect("you> ")
	term.typeLine("What did I ask you to remember?")
	term.expect(`Earlier you said: "Think of the lighthouse."`)
	term.expect("you> ")
	term.press("\x04")
	term.exited()
}

// testChatMemory: on a terminal, what the companion noted shows with
// /memory, /memory set reads a block line by line, /search finds the fact,
// and /forget erases everything once yes is typed.
func testChatMemory(t *testing.T, bin string, svc *proc) {
	term := startTerminal(t, bin, clientEnv("COMPANION_URL="+svc.url, "COMPANION_RESOURCE=u-memory", "TERM=xterm-256color"), "chat", "--thread", "m1")
	term.expect("you> ")
	term.typeLine("Remember that my sister is called Ana.")
	term.expect("Remember that my sister is called Ana.\n" + disclosureLine + "⚙ updateWorkingMemory (noting what it learned of you)\n→ noted (version 1)\n")
	term.expect(`I'll remember that: "my sister is called Ana".`)
	term.expect("\nyou> ")
	term.typeLine("/memory")
	term.expect("/memory\n# About the user\n")
	term.expect("- my sister is called Ana\n(version 1, changed ")
	term.expect("you> ")

	term.typeLine("/memory set")
	term.expect("a line with only . ends it (Ctrl-C keeps what it knows)\n... ")
	term.typeLine("# About me")
	term.expect("... ")
	term.typeLine("- Sister: Ana")
	term.expect("... ")
	term.typeLine(".")
	term.expect("kept (version 2)\nyou> ")

	term.typeLine("/search sister")
	term.expect("found for \"sister\", best first:\n")
	term.expect(`(thread m1)` + "\n   you: Remember that my sister is called Ana.\n")
	term.expect("you> ")

	term.typeLine("/forget")
	term.expect("It cannot be undone. Type yes to go on.\nforget everything? ")
	term.typeLine("yes")
	term.expect("forgotten: 1 thread, ")
	term.expect("new thread chat-")
	term.expect("you> ")
	term.typeLine("/memory")
	term.expect("nothing kept yet")
	term.expect("you> ")
	term.press("\x04")
	term.exited()
	if !strings.Contains(term.rawScreen(), "\x1b[33mforgotten: ") {
		t.Errorf("the erasure is not in its colour:\n%q", term.rawScreen())
	}
}

// testAsk runs `companion ask` as a script would: the reply on stdout (tool
// calls as notes on stderr), --json for the generate body, and a refusal as
// a message and a non-zero status.
func testAsk(t *testing.T, bin string, svc *proc) {
	ask := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, append([]string{"ask"}, args...)...)
		cmd.Env = clientEnv("COMPANION_URL="+svc.url, "COMPANION_RESOURCE=u1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	out, notes, err := ask("What's the weather in Berlin?", "--thread", "a1")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, notes)
	}
	if want := "Okay, I looked it up for you! In Berlin it is 3.2°C (feels like -0.4°C) with overcast, humidity 81%, wind 14.8 km/h and gusts up to 29.5 km/h. Take care out there, and tell me how your day goes!\n"; out != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	// A new thread: the notes start with the disclosure.
	if notes != disclosureLine+"⚙ weatherTool {\"location\":\"Berlin\"}\n→ 3.2°C overcast in Berlin\n" {
		t.Fatalf("stderr %q", notes)
	}

	out, notes, err = ask("--json", "--personality", "philosopher", "--thread", "a1", "And tomorrow?")
	if err != nil {
		t.Fatalf("ask --json: %v\n%s", err, notes)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var body api.GenerateResponse
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("the output is not the generate body: %v\n%s", err, out)
	}
	if !strings.HasPrefix(body.Text, `Let us look beneath the surface of this. You ask: "And tomorrow?" You said before: "What's the weather in Berlin?"`) ||
		body.FinishReason != api.FinishStop || body.RunID == "" || len(body.Steps) != 1 || notes != "" {
		t.Fatalf("generate body %+v, stderr %q", body, notes)
	}

	// A new thread: its id on stderr, then the disclosure, and --thread
	// goes on with it.
	out, notes, err = ask("Hi, I'm Sam and I love the sea.")
	m := regexp.MustCompile(`^thread: (ask-[0-9a-f]{12}) \(continue it with --thread (ask-[0-9a-f]{12})\)\n` + regexp.QuoteMeta(disclosureLine) + `$`).FindStringSubmatch(notes)
	if err != nil || m == nil || m[1] != m[2] || !strings.HasPrefix(out, "Hey,") {
		t.Fatalf("ask on a new thread: %v, stdout %q, stderr %q", err, out, notes)
	}
	out, notes, err = ask("--thread", m[1], "What should I do this weekend?")
	if err != nil || notes != "" || !strings.Contains(out, `Earlier you mentioned: "Hi, I'm Sam and I love the sea."`) {
		t.Fatalf("ask --thread %s: %v, stdout %q, stderr %q", m[1], err, out, notes)
	}

	// Refused: another resource's thread.
	_, notes, err = ask("--resource", "u2", "--thread", "a1", "Hi")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || notes != "companion: thread \"a1\" belongs to another resource (HTTP 403)\n" {
		t.Fatalf("ask on another resource's thread: %v, stderr %q", err, notes)
	}
	_, notes, err = ask()
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(notes, "no message") {
		t.Fatalf("ask without a message: %v, stderr %q", err, notes)
	}
}
