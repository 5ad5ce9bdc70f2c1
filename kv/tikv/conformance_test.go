package tikv

import (
	"testing"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/kvtest"
)

func TestStore_PassesConformanceOnRegions(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.Store {
		s, err := New(mockKVStore(t, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
