package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// referralsCommand is `companion referrals`: how many crisis referrals a
// running service's replies showed, per UTC day and locale, and their
// total, for the yearly report (the last 365 days by default). With
// --json it is the route's body. With authentication on, the API key must
// be one given every resource (*).
func referralsCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	const name = "companion referrals"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: %s [-from YYYY-MM-DD] [-to YYYY-MM-DD] [-json]\n\n", name)
		fmt.Fprint(w, "The crisis referrals a running service's replies showed, per UTC day and\nlocale, and their total: counts only, without personal data.\n\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	var from, to string
	var asJSON bool
	var svc serviceFlags
	svc.register(fs, getenv, "one given every resource (*)")
	fs.StringVar(&from, "from", "", "the first UTC day, YYYY-MM-DD (default: 364 days before -to)")
	fs.StringVar(&to, "to", "", "the last UTC day, YYYY-MM-DD (default: today)")
	fs.BoolVar(&asJSON, "json", false, "print the report as the service's JSON instead of a table")
	if err := parseFlags(fs, args, usage, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\nrun '%s -h' for the flags\n", name, fs.Arg(0), name)
		return errUsage
	}
	for _, d := range []struct{ flag, v string }{{"from", from}, {"to", to}} {
		if d.v == "" {
			continue
		}
		if _, err := time.Parse(time.DateOnly, d.v); err != nil {
			fmt.Fprintf(stderr, "%s: -%s: %q is not a day such as 2027-07-01\nrun '%s -h' for the flags\n", name, d.flag, d.v, name)
			return errUsage
		}
	}
	c, err := svc.client(name, stderr)
	if err != nil {
		return err
	}
	report, body, err := c.Referrals(ctx, from, to)
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
	fmt.Fprintf(stdout, "Crisis referrals from %s to %s (UTC days)\n\n", report.From, report.To)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DAY\tLOCALE\tCOUNT")
	for _, d := range report.Days {
		locale := d.Locale
		if locale == "" {
			locale = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\n", d.Day, locale, d.Count)
	}
	fmt.Fprintf(tw, "total\t\t%d\n", report.Total)
	return tw.Flush()
}
