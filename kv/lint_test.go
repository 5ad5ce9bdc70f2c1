package kv

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawAtomic matches sync/atomic's untyped functions; the house style is
// typed atomics (atomic.Int64 and friends), whose zero value is safe and
// whose every access is visibly atomic. A line marked "lint:raw-atomic"
// with its reason is let through: a word another library reads through a
// plain pointer (client-go's Variables.Killed, a *uint32).
var rawAtomic = regexp.MustCompile(`\batomic\.(Add|Load|Store|Swap|CompareAndSwap)(Int32|Int64|Uint32|Uint64|Uintptr|Pointer)\(`)

// TestLint_TypedAtomicsOnly checks every Go file of the module.
func TestLint_TypedAtomicsOnly(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module root is the parent of kv/")
	var files int
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if rawAtomic.MatchString(line) && !strings.Contains(line, "rawAtomic") && !strings.Contains(line, "lint:raw-atomic") {
				assert.Failf(t, "raw atomic", "%s:%d: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 20, "the walk found the module's files")
	assert.True(t, rawAtomic.MatchString("n := atomic.AddInt64(&x, 1)"), "the rule can fire")
}

// TestLint_READMEPackageTable: the README's package table names every
// package folder of the repository (nested modules included; a nested
// module's own sub-packages may be named in its row), and names no folder
// that does not exist.
func TestLint_READMEPackageTable(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|(.*)\\|$")
	listed := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		listed[m[1]] = m[2]
	}
	require.NotEmpty(t, listed, "the README has a package table")
	for dir := range listed {
		_, err := os.Stat(filepath.Join(root, dir))
		assert.NoError(t, err, "the README's package table names %s", dir)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata" || rel == filepath.Join("cmd", "scratch")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || rel == filepath.Base(rel) {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if _, ok := listed[dir]; ok {
			return nil
		}
		// A nested module's sub-package: named in its module's row.
		for parent, text := range listed {
			if strings.HasPrefix(dir, parent+"/") && strings.Contains(text, "nested module") &&
				strings.Contains(text, strings.TrimPrefix(dir, parent+"/")) {
				return nil
			}
		}
		t.Errorf("package folder %s is not in the README's package table", dir)
		return nil
	})
	require.NoError(t, err)
}
