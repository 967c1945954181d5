package settings

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestEveryNameIsListed fails on a DETCOLL_ name written as a whole string
// literal outside this package and the tests: a read, or a constant for
// one, that bypasses the list. (Some listed names are read only by the
// Python package or by tests: the list is of what users may set.)
func TestEveryNameIsListed(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	name := regexp.MustCompile(`^DETCOLL_[A-Z0-9_]+$`)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "results", "python", ".git", "testdata", "settings":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && name.MatchString(s) && !strings.HasPrefix(s, "DETCOLL_TEST_") && !strings.HasPrefix(s, "DETCOLL_MPI_TEST_") {
				t.Errorf("%s: %q: read it through package settings (and list it there)", fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestREADMETable: the README's table of variables is Table's.
func TestREADMETable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- settings table: internal/core/settings.Table -->\n", "<!-- end of settings table -->"
	_, rest, ok := strings.Cut(string(readme), begin)
	table, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("README.md has no settings table between %q and %q", begin, end)
	}
	if want := Table(); table != want {
		t.Errorf("README.md's settings table is out of date; it should read:\n%s", want)
	}
}

func TestGetRefusesUnlisted(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Get of an unlisted name did not panic")
		}
	}()
	Get("DETCOLL_NO_SUCH_THING")
}

func TestNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Vars {
		if seen[v.Name] || v.Doc == "" || v.ReadBy == "" || v.Group == "" {
			t.Errorf("%+v: a name listed twice, or a field left empty", v)
		}
		seen[v.Name] = true
	}
}
