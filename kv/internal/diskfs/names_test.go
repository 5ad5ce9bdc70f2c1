package diskfs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsTable(t *testing.T) {
	for name, want := range map[string]bool{
		"db/000012.sst": true, "000007.blob": true, "db/000003.log": false,
		"MANIFEST-000001": false, "OPTIONS-000004": false, ".sst": false, "sst": false, ".blob": false,
	} {
		assert.Equal(t, want, IsTable(name), name)
	}
}

func TestFileNum(t *testing.T) {
	for name, want := range map[string]uint64{
		"db/000012.sst": 12, `c:\db\000007.blob`: 7, "000003.log": 3, "/a/b/123456789.sst": 123456789,
	} {
		got, ok := FileNum(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for _, name := range []string{"MANIFEST-000001", "db/.sst", "db/x12.sst", "OPTIONS-000004", "db/", ""} {
		_, ok := FileNum(name)
		assert.False(t, ok, name)
	}
}
