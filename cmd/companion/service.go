package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"

	"github.com/companionhq/companion/internal/client"
)

// serviceFlags are the flags of a command that asks a running service
// (companion referrals, companion minor): its address and an API key.
type serviceFlags struct{ url, apiKey string }

// register adds -url and -api-key to fs, from COMPANION_URL and
// COMPANION_API_KEY by default; keyHelp says which key the command needs.
func (s *serviceFlags) register(fs *flag.FlagSet, getenv func(string) string, keyHelp string) {
	u := setting{"url", "COMPANION_URL", "the service's address"}
	k := setting{"api-key", "COMPANION_API_KEY", "API key sent as Authorization: Bearer, " + keyHelp + " (prefer the variable: a flag shows in the process list)"}
	fs.StringVar(&s.url, u.flag, cmp.Or(getenv(u.env), defaultServiceURL), u.help())
	fs.StringVar(&s.apiKey, k.flag, getenv(k.env), k.help())
}

// client is a client of the service the flags name; an address that is
// not one is command name's usage error, told on stderr.
func (s serviceFlags) client(name string, stderr io.Writer) (*client.Client, error) {
	c, err := client.New(s.url, s.apiKey)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nrun '%s -h' for the flags\n", name, err, name)
		return nil, errUsage
	}
	return c, nil
}
