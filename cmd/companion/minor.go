package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/companionhq/companion/internal/api"
)

// minorCommand is `companion minor`: whether a running service has a
// resource marked a minor, and with -set, marks it or clears the mark.
// With -json it is the route's body. With authentication on, the API key
// must be one that may act for the resource; clearing needs one given
// every resource (*).
func minorCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	const name = "companion minor"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: %s -resource ID [-set true|false] [-json]\n\n", name)
		fmt.Fprint(w, "Whether a running service has a resource marked a minor (break reminders,\nno sexual content, whatever its requests say); -set marks it or clears\nthe mark. Clearing needs an API key given every resource (*).\n\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	var resource string
	var set optionalBool
	var asJSON bool
	var svc serviceFlags
	svc.register(fs, getenv, "one that may act for the resource, or given every resource (*) to clear the mark")
	fs.StringVar(&resource, "resource", "", "the resource's `ID` (its resourceId); required")
	fs.Var(&set, "set", "`true|false`: mark the resource a minor, or clear the mark (default: only read it)")
	fs.BoolVar(&asJSON, "json", false, "print the setting as the service's JSON")
	if err := parseFlags(fs, args, usage, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\nrun '%s -h' for the flags\n", name, fs.Arg(0), name)
		return errUsage
	}
	if strings.TrimSpace(resource) == "" {
		fmt.Fprintf(stderr, "%s: -resource is required: the resourceId whose mark to read or set\nrun '%s -h' for the flags\n", name, name)
		return errUsage
	}
	c, err := svc.client(name, stderr)
	if err != nil {
		return err
	}
	var rs *api.ResourceSafety
	var body []byte
	if set.given {
		rs, body, err = c.SetMinor(ctx, resource, set.value)
	} else {
		rs, body, err = c.ResourceSafety(ctx, resource)
	}
	if err != nil {
		return err
	}
	if asJSON {
		if _, err := stdout.Write(body); err != nil {
			return err
		}
		if !strings.HasSuffix(string(body), "\n") {
			fmt.Fprintln(stdout)
		}
		return nil
	}
	mark := "is not marked a minor"
	if rs.Minor {
		mark = "is marked a minor"
	}
	since := ""
	if rs.UpdatedAt != nil {
		since = " (since " + *rs.UpdatedAt + ")"
	}
	_, err = fmt.Fprintf(stdout, "%s %s%s\n", rs.ResourceID, mark, since)
	return err
}

// optionalBool is a flag that takes true or false, and tells whether it
// was given at all.
type optionalBool struct{ given, value bool }

func (b *optionalBool) String() string {
	if b == nil || !b.given {
		return ""
	}
	return strconv.FormatBool(b.value)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.given, b.value = true, v
	return nil
}

// Get makes the flag's errors say what it takes (flagerr.go's accepts).
func (b *optionalBool) Get() any { return b.value }
