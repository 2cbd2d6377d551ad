package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"time"
)

// parseFlags parses args with fs, which must be set to ContinueOnError.
// Help (-h) goes to help through usage, and is errHelp. A flag the
// package refuses is one line on stderr that names it and says what it
// takes, and a pointer to the help, not the whole usage: that would scroll
// the line off the screen. It is then errUsage.
func parseFlags(fs *flag.FlagSet, args []string, usage func(io.Writer), help, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usage(help)
		return errHelp
	}
	fmt.Fprintf(stderr, "%s: %s\nrun '%s -h' for the flags\n", fs.Name(), badFlag(fs, err), fs.Name())
	return errUsage
}

// The flag package's messages (go doc flag): an unknown flag, a flag
// without its value, and a value that does not parse.
var (
	unknownFlag  = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	missingValue = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	invalidValue = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-+([^:]*): `)
)

// badFlag is err, the flag package's, said as what the flag accepts.
func badFlag(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if m := unknownFlag.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("unknown flag -%s", m[1])
	}
	if m := missingValue.FindStringSubmatch(msg); m != nil {
		if w := accepts(fs.Lookup(m[1])); w != "" {
			return fmt.Sprintf("-%s needs a value: %s", m[1], w)
		}
		return fmt.Sprintf("-%s needs a value", m[1])
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		if w := accepts(fs.Lookup(m[2])); w != "" {
			return fmt.Sprintf("-%s: %s is not %s", m[2], m[1], w)
		}
	}
	return msg
}

// accepts says what values flag f takes, by its type; "" for text, which
// every value is.
func accepts(f *flag.Flag) string {
	if f == nil {
		return ""
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return wantDuration
	case bool:
		return wantBool
	case int, int64:
		return wantWhole
	case float64:
		return wantNumber
	}
	return ""
}

// What a setting of each type accepts, in its errors.
const (
	wantDuration = "a duration such as 10s or 1m30s"
	wantBool     = "true or false"
	wantWhole    = "a whole number"
	wantNumber   = "a number"
)
