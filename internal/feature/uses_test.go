package feature

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// repoFiles parses every Go file of the module outside this package.
func repoFiles(t *testing.T) map[string]*ast.File {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || filepath.Dir(path) == "." {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(path[len(root)+1:])] = f
		return nil
	})
	assert.NilError(t, err)
	return out
}

// TestProbesNameKnownFeatures holds every probe to the registry: no string
// becomes a Feature outside this package (no conversion, no literal where
// a probe takes a Feature), a probe that names a constant names one of
// names.go, and every constant is used.
func TestProbesNameKnownFeatures(t *testing.T) {
	consts := map[string]bool{}
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	assert.NilError(t, err)
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Feature" {
				consts[vs.Names[0].Name] = true
			}
		}
	}
	assert.Equal(t, len(consts), len(Features), "every Feature constant is in Features, with the seeds it gates")
	// takesFeature are the calls whose first argument is a Feature.
	takesFeature := map[string]bool{"feature.Unsupported": true, "dropmon.Reason": true, "Reason": true}
	used := map[string]bool{}
	for path, file := range repoFiles(t) {
		ast.Inspect(file, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok {
				if name, ok := featureSel(e); ok && consts[name] {
					used[name] = true
				}
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn := callName(call.Fun)
			if fn == "feature.Feature" {
				t.Errorf("%s: feature.Feature(…) makes a feature from a string: add a constant to names.go", path)
			}
			var arg ast.Expr
			switch {
			case takesFeature[fn] && len(call.Args) > 0:
				arg = call.Args[0]
			case fn == "dropmon.Watch" && len(call.Args) == 4:
				arg = call.Args[3]
			case fn == "observe.Probe" && len(call.Args) == 3:
				arg = call.Args[1]
			default:
				return true
			}
			switch a := arg.(type) {
			case *ast.BasicLit:
				t.Errorf("%s: %s(…, %s, …): a probe names a Feature constant, not a string", path, fn, a.Value)
			case *ast.SelectorExpr:
				if name, ok := featureSel(a); !ok || !consts[name] {
					t.Errorf("%s: %s(…) names no Feature constant of internal/feature/names.go", path, fn)
				}
			}
			return true
		})
	}
	for name := range consts {
		if !used[name] {
			t.Errorf("feature.%s is never used outside internal/feature: remove it, or probe it", name)
		}
	}
}

// TestSuiteTestsNameTheirSeed holds every test of suites/ to a verdict:
// it starts with observe.Of(t, feature.SeedX), so its failures count
// against a seed.
func TestSuiteTestsNameTheirSeed(t *testing.T) {
	n := 0
	for path, file := range repoFiles(t) {
		if !strings.HasPrefix(path, "suites/") || !strings.HasSuffix(path, "_test.go") {
			continue
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			n++
			if len(fn.Body.List) == 0 || !callsOf(fn.Body.List[0]) {
				t.Errorf("%s: %s does not start with observe.Of(t, feature.SeedX)", path, fn.Name.Name)
			}
		}
	}
	assert.Assert(t, n > 0, "no suite tests found")
}

// featureSel reports whether e is feature.NAME and returns NAME.
func featureSel(e ast.Expr) (string, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return sel.Sel.Name, ok && pkg.Name == "feature"
}

// callName is "pkg.Func" or "Func" for a call's function.
func callName(e ast.Expr) string {
	switch f := e.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return x.Name + "." + f.Sel.Name
		}
	}
	return ""
}

func callsOf(s ast.Stmt) bool {
	es, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 2 {
		return false
	}
	return callName(call.Fun) == "observe.Of"
}

// TestEverySeedIsShown holds every seed to a test that can make it
// present: some test of its suite (Seeds' Suite) calls observe.Shows(t,
// feature.SeedX, …) for it.
func TestEverySeedIsShown(t *testing.T) {
	consts := map[Seed]string{} // value -> constant name
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	assert.NilError(t, err)
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Seed" {
					lit := vs.Values[0].(*ast.BasicLit)
					consts[Seed(strings.Trim(lit.Value, `"`))] = vs.Names[0].Name
				}
			}
		}
	}
	shown := map[string]bool{} // "suite feature.SeedX"
	for path, file := range repoFiles(t) {
		suite, ok := strings.CutPrefix(path, "suites/")
		if !ok {
			continue
		}
		suite, _, _ = strings.Cut(suite, "/")
		ast.Inspect(file, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && callName(call.Fun) == "observe.Shows" && len(call.Args) == 3 {
				if name, ok := featureSel(call.Args[1]); ok {
					shown[suite+" "+name] = true
				}
			}
			return true
		})
	}
	for _, s := range Seeds {
		if !shown[s.Suite+" "+consts[s.Seed]] {
			t.Errorf("seed %s: no test of suites/%s calls observe.Shows(t, feature.%s, …): it could never be present there",
				s.Seed, s.Suite, consts[s.Seed])
		}
	}
}
