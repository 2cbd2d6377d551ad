package openapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/openapi"
)

// routesFile lists the whole API (httpapi's routes.go).
const routesFile = "../httpapi/routes.go"

// TestRoutesAreDocumented: the routes the router serves are exactly the
// document's operations, read from the source of the router (so a route
// added there without a line here fails), and a documented path answers
// any other method with 405 and an Allow that lists exactly the
// documented methods (so the running router agrees too).
func TestRoutesAreDocumented(t *testing.T) {
	doc := loadDocument(t)
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	routed := routerRoutes(t)
	for r := range routed {
		if !documented[r] {
			t.Errorf("the router serves %s, which the document does not have", r)
		}
	}
	for d := range documented {
		if !routed[d] {
			t.Errorf("the document has %s, which the router does not serve", d)
		}
	}

	c := newChecker(t)
	svc := apptest.Start(t, nil)
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}
	for path, item := range doc.Paths.Map() {
		concrete := strings.NewReplacer("{agentId}", "companionAgent", "{runId}", "some-run", "{threadId}", "t1").Replace(path)
		var allow []string
		for _, m := range methods[:5] { // the order Allow lists them in
			if item.GetOperation(m) != nil {
				allow = append(allow, m)
			}
		}
		for _, m := range methods {
			if slices.Contains(allow, m) {
				continue
			}
			res, body := c.do(t, svc, m, concrete, "", nil)
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != strings.Join(allow, ", ") {
				t.Errorf("%s %s: %d, Allow %q, want 405 and %q: %s", m, concrete, res.StatusCode, res.Header.Get("Allow"), strings.Join(allow, ", "), body)
			}
		}
	}
	if res, body := c.do(t, svc, http.MethodGet, "/api/agents/companionAgent/unknown", "", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown path: %d %s, want 404", res.StatusCode, body)
	}
}

// routerRoutes reads the routes routes.go registers, as "METHOD /path".
func routerRoutes(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	consts := map[string]string{}
	files, err := filepath.Glob(filepath.Join(filepath.Dir(routesFile), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var routes *ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(name) == filepath.Base(routesFile) {
			routes = f
		}
		// String constants, which a route's path may name.
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[id.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
			return true
		})
	}
	if routes == nil {
		t.Fatalf("%s not found", routesFile)
	}
	str := func(e ast.Expr) string {
		switch v := e.(type) {
		case *ast.BasicLit:
			s, _ := strconv.Unquote(v.Value)
			return s
		case *ast.Ident:
			if s, ok := consts[v.Name]; ok {
				return s
			}
		case *ast.SelectorExpr: // http.MethodGet, openapi.Path
			if pkg, ok := v.X.(*ast.Ident); ok && pkg.Name == "openapi" && v.Sel.Name == "Path" {
				return openapi.Path
			}
			if m, ok := strings.CutPrefix(v.Sel.Name, "Method"); ok {
				return strings.ToUpper(m)
			}
		}
		t.Fatalf("%s: a route names %T, which this test cannot read: teach routerRoutes", fset.Position(e.Pos()), e)
		return ""
	}
	out := map[string]bool{}
	ast.Inspect(routes, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		switch name := sel.Sel.Name; name {
		case "Get", "Post", "Put", "Patch", "Delete", "Head", "Options":
			out[strings.ToUpper(name)+" "+str(call.Args[0])] = true
		case "Method", "MethodFunc":
			out[str(call.Args[0])+" "+str(call.Args[1])] = true
		case "Handle", "HandleFunc", "Mount", "Route", "Connect", "Trace":
			t.Fatalf("%s: routes.go uses %s, which this test does not read: teach routerRoutes", fset.Position(call.Pos()), name)
		}
		return true
	})
	if len(out) == 0 {
		t.Fatalf("no routes found in %s", routesFile)
	}
	return out
}
