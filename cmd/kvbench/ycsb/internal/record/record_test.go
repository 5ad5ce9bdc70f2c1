package record

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rec is a record of the fields named, each value its key and name.
func rec(key string, names ...string) map[string][]byte {
	m := make(map[string][]byte, len(names))
	for _, f := range names {
		m[f] = []byte(key + "/" + f)
	}
	return m
}

var four = []string{"field0", "field1", "field2", "field3"}

// encode returns values encoded, in a slice of the caller's own.
func encode(t *testing.T, values map[string][]byte) []byte {
	t.Helper()
	e := GetEncoder()
	defer e.Release()
	b, err := e.Encode(values)
	require.NoError(t, err)
	return append([]byte(nil), b...)
}

func TestDecode_InPlace(t *testing.T) {
	b := encode(t, rec("k", four...))

	m, err := Decode(b, nil)
	require.NoError(t, err)
	assert.Equal(t, rec("k", four...), m)
	// The values are slices of b, capped: appending to one must not
	// overwrite the next field's bytes.
	m["field0"] = append(m["field0"], 'x')
	again, err := Decode(b, nil)
	require.NoError(t, err)
	assert.Equal(t, rec("k", four...), again, "an append to a decoded value reached into the record")

	sub, err := Decode(b, []string{"field2", "nope"})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"field2": rec("k", four...)["field2"]}, sub)

	if !raceEnabled {
		allocs := testing.AllocsPerRun(100, func() { _, _ = Decode(b, nil) })
		assert.LessOrEqual(t, allocs, 2.0, "names met before and values in place: only the map should allocate")
	}

	_, err = Decode([]byte{0xc1}, nil) // 0xc1 is never used in msgpack
	require.Error(t, err)
	for cut := 1; cut < len(b); cut++ {
		_, err := Decode(b[:cut], nil)
		require.Error(t, err, "a record cut to %d of %d bytes must not decode", cut, len(b))
	}
}

// A record's bytes depend on its contents, not on the map's order.
func TestEncode_FieldOrder(t *testing.T) {
	want := encode(t, rec("k", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"))
	for range 20 {
		assert.Equal(t, want, encode(t, rec("k", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")))
	}
}

func TestMerge(t *testing.T) {
	e := GetEncoder()
	defer e.Release()
	b, err := e.Merge(encode(t, rec("k", "field0", "field1", "field2")), map[string][]byte{"field1": []byte("new"), "field9": []byte("added")})
	require.NoError(t, err)
	want := rec("k", "field0", "field1", "field2")
	want["field1"] = []byte("new")
	want["field9"] = []byte("added")
	assert.Equal(t, encode(t, want), b)

	_, err = e.Merge([]byte{0xc1}, nil)
	require.Error(t, err)
}

func TestKey_TableBounds(t *testing.T) {
	assert.Equal(t, []byte("usertable:user1"), Key("usertable", "user1"))
	assert.Equal(t, []byte("usertable:"), TablePrefix("usertable"))
	end := TableEnd("usertable")
	assert.Less(t, string(Key("usertable", "\xff\xff")), string(end), "every record of the table sorts before its end")
	assert.Less(t, string(end), string(Key("usertablf", "")), "the next table's records sort after it")
}
