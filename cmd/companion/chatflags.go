package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/client"
)

// defaultServiceURL is where chat and ask look for the service: where
// `companion serve` listens by default.
const defaultServiceURL = "http://127.0.0.1:4111"

// personalities are the values of --personality.
var personalities = []string{api.PersonalityGuru, api.PersonalityWanderer, api.PersonalityFriend, api.PersonalityPhilosopher}

// clientFlags are the settings of the commands that talk to a running
// service: chat and ask.
type clientFlags struct {
	url, thread, resource, personality, apiKey string
	// fresh is a thread made here, not named by --thread: its id is shown,
	// so that the conversation can go on.
	fresh bool
}

// parseClientFlags reads the shared flags of command name (flags over
// environment over defaults), with the command's own added by extra. Flags
// may come before or after the arguments, which it returns. A fresh thread
// id, with prefix, is made when --thread is not given. Help goes to help.
func parseClientFlags(name, prefix, synopsis string, args []string, getenv func(string) string, help, stderr io.Writer, extra func(*flag.FlagSet)) (clientFlags, []string, error) {
	fs := flag.NewFlagSet("companion "+name, flag.ContinueOnError)
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: companion %s\n\n", synopsis)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	var f clientFlags
	var errs []error
	env := func(s setting, def string) string {
		return fromEnv(getenv, s.env, def, func(v string) (string, error) { return v, nil }, "", &errs)
	}
	str := func(p *string, s setting, def string) { fs.StringVar(p, s.flag, env(s, def), s.help()) }
	str(&f.url, setting{"url", "COMPANION_URL", "the service's address"}, defaultServiceURL)
	fs.StringVar(&f.thread, "thread", "", "the conversation thread to continue (default: a new one, whose id is shown)")
	str(&f.resource, setting{"resource", "COMPANION_RESOURCE", "the resource (user) the thread belongs to"}, "")
	str(&f.personality, setting{"personality", "COMPANION_PERSONALITY", "who answers: " + strings.Join(personalities, ", ")}, api.PersonalityFriend)
	str(&f.apiKey, setting{"api-key", "COMPANION_API_KEY", "API key or token sent as Authorization: Bearer (prefer the variable: a flag shows in the process list)"}, "")
	if extra != nil {
		extra(fs)
	}

	var rest []string
	for {
		if err := parseFlags(fs, args, usage, help, stderr); err != nil {
			return f, nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if err := checkPersonality(f.personality); err != nil {
		errs = append(errs, err)
	}
	if _, err := client.New(f.url, ""); err != nil {
		errs = append(errs, err)
	}
	f.thread = strings.TrimSpace(f.thread)
	if f.thread == "" {
		f.thread, f.fresh = newThreadID(prefix), true
	}
	return f, rest, errors.Join(errs...)
}

func checkPersonality(p string) error {
	if !slices.Contains(personalities, p) {
		return fmt.Errorf("personality %q is not one of %s", p, strings.Join(personalities, ", "))
	}
	return nil
}

// newThreadID is a fresh thread id: prefix and 12 random hex digits.
func newThreadID(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// request is a turn of one user message, as the flags say.
func (f clientFlags) request(text string) api.GenerateRequest {
	return api.GenerateRequest{
		ThreadID:       f.thread,
		ResourceID:     f.resource,
		Messages:       []api.Message{{Role: api.RoleUser, Content: text}},
		RuntimeContext: &api.RuntimeContext{Metadata: api.RuntimeMetadata{Personality: f.personality}},
	}
}

// client is a client of the service the flags name.
func (f clientFlags) client() (*client.Client, error) { return client.New(f.url, f.apiKey) }
