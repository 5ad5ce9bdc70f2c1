package binding

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/magiconair/properties"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOpenDir_Temp(t *testing.T) {
	var b Base
	require.NoError(t, b.OpenDir(properties.NewProperties(), "", "binding-test-"))
	require.DirExists(t, b.Dir())
	cause := errors.New("store failed")
	assert.Equal(t, cause, b.RemoveDir(cause), "the store's error is kept")
	_, err := os.Stat(b.Dir())
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestOpenDir_Given(t *testing.T) {
	for _, tc := range []struct {
		dropData string
		kept     bool
	}{{"false", true}, {"true", false}} {
		t.Run("dropdata="+tc.dropData, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "old")
			require.NoError(t, os.WriteFile(file, nil, 0o644))
			var b Base
			require.NoError(t, b.OpenDir(properties.LoadMap(map[string]string{"dropdata": tc.dropData}), dir, "unused-"))
			assert.Equal(t, dir, b.Dir())
			_, err := os.Stat(file)
			assert.Equal(t, tc.kept, err == nil, "the store's old data")
			require.NoError(t, b.RemoveDir(nil))
			if tc.kept {
				assert.DirExists(t, dir, "a directory given is never removed")
			}
		})
	}
}

func TestRetries(t *testing.T) {
	var b Base
	b.Retried()
	b.Retried()
	assert.Equal(t, int64(2), b.TxnRetries())
}
