// Package browsertest drives the web chat page in a real browser: Debian's
// Chromium (/usr/bin/chromium), headless, through playwright-core (pinned in
// package-lock.json), against the built service. The service runs the
// binaries of ./cmd/companion and ./fakes/cmd/fakes as processes, twice:
// with an API key, and with authentication off (for a first visit); the
// fake model is slowed down so that a reply streams for a while, and the
// weather tool is on the fake Open-Meteo. The scenarios are in
// chat.test.mjs; screenshots go to output/ (and, with -update, the desktop
// one to docs/web-chat.png).
//
// Without node (20 or newer), npm or Chromium the test is skipped, except
// under CI=true, where it fails. node_modules is installed with `npm ci`
// when it is missing or was installed from another package-lock.json, only
// with CI=true or COMPANION_INSTALL=1.
package browsertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/nodetest"
)

const (
	// apiKey and resource are the one line of the service's API key file.
	apiKey   = "browsertest-key-0123456789abcdef"
	resource = "browsertest-user"
	// chromium is Debian's package's browser.
	chromium = "/usr/bin/chromium"
	// tokenDelay paces the fake model: a reply of some 40 words streams for
	// about two seconds, time enough to see it grow and to stop it.
	tokenDelay = "50ms"
)

var suite = nodetest.Suite{What: "the browser test of the web chat", Setup: ".ci/browser"}

func TestWebChat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and drives Chromium")
	}
	suite.RequireNode(t)
	if _, err := os.Stat(chromium); err != nil {
		suite.Unavailable(t, "%s is missing (Debian's chromium package)", chromium)
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	suite.InstallModules(t, dir)

	root := filepath.Join(dir, "..", "..", "..")
	bin := nodetest.BuildBinaries(t, root)
	meteo := nodetest.StartFakeOpenMeteo(t, filepath.Join(bin, "fakes"))
	base, logs := nodetest.StartService(t, filepath.Join(bin, "companion"), meteo, apiKey, resource, "-fake-token-delay", tokenDelay)
	openBase, openLogs := nodetest.StartService(t, filepath.Join(bin, "companion"), meteo, "", "", "-fake-token-delay", tokenDelay)

	out := filepath.Join(dir, "output")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"COMPANION_TEST_URL="+base,
		"COMPANION_TEST_OPEN_URL="+openBase,
		"COMPANION_TEST_API_KEY="+apiKey,
		"COMPANION_TEST_RESOURCE="+resource,
		"COMPANION_TEST_OUTPUT="+out,
		"COMPANION_TEST_CHROMIUM="+chromium,
		"NO_COLOR=1",
	)
	if testkit.Updating() {
		env = append(env, "COMPANION_TEST_DOCS_SCREENSHOT="+filepath.Join(root, "docs", "web-chat.png"))
	}
	if err := nodetest.RunNode(t, dir, env, "chat.test.mjs"); err != nil {
		t.Errorf("node --test chat.test.mjs: %v", err)
		t.Logf("the service's log (at most the last 60 lines):\n%s", logs.Tail(60))
		t.Logf("the log of the service without authentication (at most the last 30 lines):\n%s", openLogs.Tail(30))
	}
	t.Logf("screenshots in %s", out)
}
