package faultfs

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSyncFaults_FailSyncsOnlyWhenOn: off, the filesystem works; on,
// every kind of sync fails with errorfs.ErrInjected and writes still
// succeed; off again, syncs succeed.
func TestSyncFaults_FailSyncsOnlyWhenOn(t *testing.T) {
	inj := SyncFaults()
	fs := errorfs.Wrap(vfs.NewMem(), inj)
	f, err := fs.Create("f", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	_, err = f.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())

	inj.On()
	_, err = f.Write([]byte("y"))
	assert.NoError(t, err, "only syncs fail")
	assert.ErrorIs(t, f.Sync(), errorfs.ErrInjected)
	assert.ErrorIs(t, f.SyncData(), errorfs.ErrInjected)
	_, err = f.SyncTo(2)
	assert.ErrorIs(t, err, errorfs.ErrInjected)

	inj.Off()
	assert.NoError(t, f.Sync())
}
