package coproc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeJSON(t *testing.T) {
	r, err := DecodeJSON([]byte(`{
		"ranges": [{"start": "user/", "end": "user0"}],
		"filter": {"op": "gt", "args": [{"op": "col", "col": "age"}, {"op": "const", "value": 30}]},
		"aggs": [{"func": "sum", "col": "score", "as": "total"}, {"func": "count"}],
		"group_by": ["city"],
		"paging_size": 10
	}`))
	require.NoError(t, err)
	require.Len(t, r.Ranges, 1)
	assert.Equal(t, []byte("user/"), r.Ranges[0].Start)
	assert.Equal(t, []byte("user0"), r.Ranges[0].End)
	require.NotNil(t, r.Filter)
	assert.Equal(t, "gt", r.Filter.Op)
	require.Len(t, r.Filter.Args, 2)
	assert.EqualValues(t, 30, r.Filter.Args[1].Value)
	assert.Equal(t, []string{"city"}, r.GroupBy)
	assert.Equal(t, 10, r.PagingSize)
	assert.Equal(t, "total", r.Aggs[0].As)

	// The float stays a float; the same request round-trips through Encode.
	r2, err := DecodeJSON([]byte(`{"ranges":[{"start":"a","end":"b"}],"filter":{"op":"const","value":2.5}}`))
	require.NoError(t, err)
	assert.Equal(t, 2.5, r2.Filter.Value)
	b, err := Encode(r2)
	require.NoError(t, err)
	r3, err := Decode(b)
	require.NoError(t, err)
	assert.Equal(t, r2, r3)
}

func TestDecodeJSON_Malformed(t *testing.T) {
	for name, in := range map[string]string{
		"not json":        `{"ranges":`,
		"not an object":   `[1,2]`,
		"trailing data":   `{"ranges":[]} {}`,
		"unknown field":   `{"ranges":[],"filtre":{}}`,
		"wrong type":      `{"ranges":"a..b"}`,
		"huge number":     `{"ranges":[],"filter":{"op":"const","value":1e999}}`,
		"empty":           ``,
		"too deep filter": `{"filter":` + nest(MaxDepth+5) + `}`,
	} {
		_, err := DecodeJSON([]byte(in))
		assert.ErrorIs(t, err, ErrMalformed, name)
	}
}

func nest(n int) string {
	s := `{"op":"const","value":1}`
	for range n {
		s = `{"op":"not","args":[` + s + `]}`
	}
	return s
}

// TestDecodeJSON_DuplicateKeys: as strict as Decode — a key twice in one
// object is refused wherever it is (encoding/json alone would keep the last,
// and a "filter" followed by "filter": null would read every row), while
// one key in several objects is fine.
func TestDecodeJSON_DuplicateKeys(t *testing.T) {
	for _, in := range []string{
		`{"ranges": [{}], "filter": {"op": "eq", "args": [{"op": "col", "col": "a"}, {"op": "const", "value": 1}]}, "filter": null}`,
		`{"ranges": [{"start": "a", "start": "b"}]}`,
		`{"ranges": [{}], "filter": {"op": "not", "op": "and", "args": []}}`,
		`{"ranges": [{}], "aggs": [{"func": "count"}], "group_by": ["a"], "aggs": []}`,
	} {
		_, err := DecodeJSON([]byte(in))
		assert.ErrorIs(t, err, ErrDuplicateKey, in)
	}
	r, err := DecodeJSON([]byte(`{"ranges": [{"start": "a", "end": "b"}, {"start": "c", "end": "d"}],
		"filter": {"op": "and", "args": [{"op": "col", "col": "x"}, {"op": "col", "col": "y"}]}}`))
	require.NoError(t, err)
	assert.Len(t, r.Ranges, 2)
}
