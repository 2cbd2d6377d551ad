// Package clienttest drives the real JavaScript client packages that
// front ends use, @mastra/client-js, the AI SDK's `ai` and OpenAI's
// `openai`, against the built service: the binaries of ./cmd/companion and
// ./fakes/cmd/fakes, started as processes, with authentication on and the
// weather tool pointed at the fake Open-Meteo. The scripts are in node/; their versions are pinned in
// node/package-lock.json.
//
// Without node (20 or newer) and npm the test is skipped, except under
// CI=true, where it fails. node_modules is installed with `npm ci` when it is
// missing or was installed from another package-lock.json, only under
// CI=true or COMPANION_INSTALL=1; elsewhere the test is then skipped.
package clienttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/nodetest"
)

const (
	// apiKey and resource are the one line of the service's API key file:
	// every request of the scripts acts for resource.
	apiKey   = "clienttest-key-0123456789abcdef"
	resource = "clienttest-user"
)

// scripts are the node test files, each run as a subtest of its own.
var scripts = []string{"mastra.test.mjs", "aisdk.test.mjs", "openai.test.mjs"}

var suite = nodetest.Suite{What: "the JavaScript client tests", Setup: ".ci/node"}

func TestNodeClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs the JavaScript clients")
	}
	suite.RequireNode(t)
	nodeDir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	suite.InstallModules(t, nodeDir)

	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := nodetest.BuildBinaries(t, root)
	meteo := nodetest.StartFakeOpenMeteo(t, filepath.Join(bin, "fakes"))
	base, logs := nodetest.StartService(t, filepath.Join(bin, "companion"), meteo, apiKey, resource)

	env := append(os.Environ(),
		"COMPANION_TEST_URL="+base,
		"COMPANION_TEST_API_KEY="+apiKey,
		"COMPANION_TEST_RESOURCE="+resource,
		"NO_COLOR=1",
	)
	for _, script := range scripts {
		t.Run(strings.TrimSuffix(script, ".test.mjs"), func(t *testing.T) {
			from := logs.Count()
			if err := nodetest.RunNode(t, nodeDir, env, script); err != nil {
				t.Errorf("node --test %s: %v", script, err)
				t.Logf("the service's log while it ran (at most the last 60 lines):\n%s", logs.Since(from, 60))
			}
		})
	}
}
