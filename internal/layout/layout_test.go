package layout_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/companionhq/companion/"

// mayImport lists, for each package of the service (test support aside),
// the packages of this module it may import: docs/architecture.md's rules.
// A package missing here is a package the document does not describe yet.
var mayImport = map[string][]string{
	"cmd/companion":              {"internal/api", "internal/app", "internal/auth", "internal/client", "internal/redact", "internal/telemetry"},
	"internal/app":               {"internal/agent", "internal/apperr", "internal/auth", "internal/embed", "internal/embedindex", "internal/httpapi", "internal/limits", "internal/memory", "internal/memory/postgres", "internal/memory/sqlite", "internal/model", "internal/model/provider", "internal/openapi", "internal/pricing", "internal/redact", "internal/runlog", "internal/safety", "internal/safety/moderation", "internal/telemetry", "internal/tool/mcp", "internal/tool/weather", "internal/turn", "internal/web"},
	"internal/httpapi":           {"internal/agent", "internal/api", "internal/apperr", "internal/auth", "internal/limits", "internal/memory", "internal/model", "internal/offstack", "internal/openapi", "internal/pricing", "internal/requestid", "internal/run", "internal/runlog", "internal/turn"},
	"internal/telemetry":         {"internal/agent", "internal/api", "internal/httpapi", "internal/requestid", "internal/runlog", "internal/turn"},
	"internal/api":               {},
	"internal/client":            {"internal/api"},
	"internal/run":               {"internal/agent", "internal/apperr", "internal/model", "internal/pricing", "internal/runlog"},
	"internal/runlog":            {},
	"internal/turn":              {"internal/agent", "internal/apperr", "internal/embed", "internal/limits", "internal/memory", "internal/model", "internal/offstack", "internal/pricing"},
	"internal/limits":            {"internal/apperr", "internal/memory", "internal/redact"},
	"internal/memory":            {"internal/model"},
	"internal/embed":             {"internal/model"},
	"internal/embedindex":        {"internal/embed", "internal/memory"},
	"internal/memory/sqlite":     {"internal/memory", "internal/memory/bm25", "internal/memory/locks", "internal/memory/migrate"},
	"internal/memory/bm25":       {"internal/memory"},
	"internal/safety":            {"internal/agent", "internal/safety/crisis", "internal/safety/moderation", "internal/safety/pii", "internal/turn"},
	"internal/safety/crisis":     {},
	"internal/safety/moderation": {"internal/model", "internal/redact"},
	"internal/safety/pii":        {},
	"internal/memory/postgres":   {"internal/memory", "internal/memory/locks", "internal/memory/migrate"},
	"internal/memory/locks":      {},
	"internal/memory/migrate":    {},
	"internal/agent":             {"internal/model", "internal/pricing"},
	"internal/tool/weather":      {},
	"internal/tool/mcp":          {},
	"internal/model":             {},
	"internal/model/fake":        {"internal/model"},
	"internal/model/cohere":      {"internal/model"},
	"internal/model/openai":      {"internal/model"},
	"internal/model/replay":      {"internal/model"},
	"internal/model/provider":    {"internal/model", "internal/model/cohere", "internal/model/fake", "internal/model/openai", "internal/model/replay", "internal/redact"},
	"internal/pricing":           {"internal/model"},
	"internal/auth":              {},
	"internal/apperr":            {},
	"internal/offstack":          {},
	"internal/openapi":           {},
	"internal/redact":            {},
	"internal/requestid":         {},
	"internal/web":               {},
	"internal/layout":            {},
}

// testSupport reports whether pkg is test support, which the service never
// imports: fakes of other services, the test kit, the suites and helpers.
func testSupport(pkg string) bool {
	return strings.HasPrefix(pkg, "fakes/") || strings.HasPrefix(pkg, "tools/") || strings.HasPrefix(pkg, "internal/testkit") ||
		strings.HasSuffix(pkg, "test") || pkg == "golden" || pkg == "observability"
}

// TestLayout: every package of the service imports only what its row
// above allows, and docs/architecture.md names every package.
func TestLayout(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if testSupport(pkg) {
			continue
		}
		seen[pkg] = true
		allowed, ok := mayImport[pkg]
		if !ok {
			t.Errorf("package %s has no row in mayImport (and docs/architecture.md): say what it owns and may import", pkg)
			continue
		}
		if !strings.Contains(string(doc), "`"+pkg+"`") {
			t.Errorf("docs/architecture.md does not name %s", pkg)
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow it", pkg, imp)
			}
		}
	}
	for pkg := range mayImport {
		if !seen[pkg] {
			t.Errorf("mayImport has a row for %s, which is not a package of the service", pkg)
		}
	}
}
