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
// whose every access is visibly atomic.
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
			if rawAtomic.MatchString(line) && !strings.Contains(line, "rawAtomic") {
				assert.Failf(t, "raw atomic", "%s:%d: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 20, "the walk found the module's files")
	assert.True(t, rawAtomic.MatchString("n := atomic.AddInt64(&x, 1)"), "the rule can fire")
}
