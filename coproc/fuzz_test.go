package coproc

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The seed corpus lives in testdata/fuzz/<FuzzName>/ and runs with every
// plain go test. Regenerate it with
//
//	go test -run TestFuzzCorpus_Update -update-corpus ./coproc/
//
// Crashers the fuzzer finds land there by themselves; keep them.
var updateCorpus = flag.Bool("update-corpus", false, "rewrite the generated seed corpus under testdata/fuzz")

// FuzzDecode: Decode never panics, refuses with ErrMalformed, and what it
// accepts survives Encode and Decode unchanged.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			require.Nil(t, r)
			return
		}
		e1, err := Encode(r)
		require.NoError(t, err)
		r2, err := Decode(e1)
		require.NoError(t, err)
		if !exprHasNaN(r.Filter) {
			require.Equal(t, r, r2)
		}
		// Encoding is deterministic, so equal requests (NaNs included)
		// encode alike.
		e2, err := Encode(r2)
		require.NoError(t, err)
		require.Equal(t, e1, e2)
	})
}

// FuzzDecodeRow: DecodeRow never panics, the column decoder agrees with it
// on every input, and what it accepts survives EncodeRow and DecodeRow.
func FuzzDecodeRow(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		row, err := DecodeRow(b)
		cols := []string{"a", "v", ""}
		for k := range row {
			cols = append(cols, k)
		}
		dst := make([]any, len(cols))
		cerr := newColumnDecoder(cols).decode(b, dst)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			require.ErrorIs(t, cerr, ErrMalformed)
			require.Equal(t, make([]any, len(cols)), dst)
			return
		}
		require.NoError(t, cerr)
		nan := hasNaN(row)
		for i, c := range cols {
			if !nan {
				require.Equal(t, row[c], dst[i], c)
			}
		}
		e1, err := EncodeRow(row)
		require.NoError(t, err)
		row2, err := DecodeRow(e1)
		require.NoError(t, err)
		if !nan {
			require.Equal(t, row, row2)
		}
		e2, err := EncodeRow(row2)
		require.NoError(t, err)
		require.Equal(t, e1, e2)
	})
}

// FuzzDecodeResponse: as FuzzDecode, for responses.
func FuzzDecodeResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResponse(b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			return
		}
		e1, err := EncodeResponse(r)
		require.NoError(t, err)
		r2, err := DecodeResponse(e1)
		require.NoError(t, err)
		nan := false
		for _, row := range r.Rows {
			nan = nan || hasNaN(row)
		}
		if !nan {
			require.Equal(t, r, r2)
		}
		e2, err := EncodeResponse(r2)
		require.NoError(t, err)
		require.Equal(t, e1, e2)
	})
}

// hasNaN reports whether a normalized value holds a NaN, which no
// equality assertion can match.
func hasNaN(v any) bool {
	switch x := v.(type) {
	case float64:
		return math.IsNaN(x)
	case []any:
		for _, e := range x {
			if hasNaN(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasNaN(e) {
				return true
			}
		}
	}
	return false
}

func exprHasNaN(e *Expr) bool {
	if e == nil {
		return false
	}
	if hasNaN(e.Value) {
		return true
	}
	for _, a := range e.Args {
		if exprHasNaN(a) {
			return true
		}
	}
	return false
}

// TestFuzzCorpus_Update writes the generated seeds: the length bombs, deep
// nesting, and every truncation of a few valid messages.
func TestFuzzCorpus_Update(t *testing.T) {
	if !*updateCorpus {
		t.Skip("rewrites testdata/fuzz; run with -update-corpus")
	}
	reqs, resps, rows := validMessages(t)
	medium, err := Encode(&Request{
		Ranges:  []KeyRange{{Start: []byte("a"), End: []byte("b")}},
		Filter:  &Expr{Op: "in", Args: []*Expr{{Op: "col", Col: "x"}}, Value: []any{1, -2, "s", 1.5}},
		Columns: []string{"x"},
		Limit:   5,
	})
	require.NoError(t, err)

	// bombs are headers claiming far more than follows, at the top and
	// one level down: {"a": bomb}, or inside a filter's value.
	bombs := map[string][]byte{
		"map32":   {0xdf, 0xff, 0xff, 0xff, 0xff},
		"map16":   {0xde, 0xff, 0xff},
		"array32": {0xdd, 0xff, 0xff, 0xff, 0xff},
		"array16": {0xdc, 0xff, 0xff},
		"str32":   {0xdb, 0xff, 0xff, 0xff, 0xff},
		"str16":   {0xda, 0xff, 0xff},
		"bin32":   {0xc6, 0xff, 0xff, 0xff, 0xff},
		"bin16":   {0xc5, 0xff, 0xff},
		"ext32":   {0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
		"fixext":  {0xd6, 0xff, 0, 0, 0, 0},
	}
	common := map[string][]byte{
		"deep-4096":      cat([]byte{0x81}, fixstr("a"), bytes.Repeat([]byte{0x91}, 4096), []byte{0xc0}),
		"deep-maxdepth":  nested(MaxDepth),
		"deep-maxdepth1": nested(MaxDepth + 1),
		"deep-maxdepth3": nested(MaxDepth + 3),
		"empty":          {},
		"nil":            {0xc0},
		"int-key":        {0x81, 0x01, 0xc0},
		"trailing":       {0x80, 0x00},
	}
	for name, b := range bombs {
		common["bomb-"+name] = b
		common["bomb-"+name+"-nested"] = cat([]byte{0x81}, fixstr("a"), b)
	}

	seeds := map[string]map[string][]byte{"FuzzDecode": {}, "FuzzDecodeRow": {}, "FuzzDecodeResponse": {}}
	for _, s := range seeds {
		for name, b := range common {
			s[name] = b
		}
	}
	for name, b := range bombs {
		seeds["FuzzDecode"]["bomb-"+name+"-value"] = rawRequest(b)
		seeds["FuzzDecodeResponse"]["bomb-"+name+"-row"] = rawResponse(b)
	}
	seeds["FuzzDecode"]["deep-value"] = rawRequest(cat(bytes.Repeat([]byte{0x91}, MaxDepth-2), []byte{0x01}))
	seeds["FuzzDecode"]["dup-key"] = cat([]byte{0x82}, fixstr("limit"), []byte{1}, fixstr("limit"), []byte{2})
	seeds["FuzzDecode"]["unknown-field"] = cat([]byte{0x81}, fixstr("filtr"), []byte{0x80})
	for i, n := range rawNumbers {
		seeds["FuzzDecode"][fmt.Sprintf("number-%02d", i)] = rawRequest(n.enc)
		seeds["FuzzDecodeRow"][fmt.Sprintf("number-%02d", i)] = rawRow(n.enc)
	}
	seeds["FuzzDecode"]["nan"] = rawRequest([]byte{0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1})
	seeds["FuzzDecodeRow"]["nan"] = rawRow([]byte{0xca, 0x7f, 0xc0, 0, 1})

	addAll := func(s map[string][]byte, prefix string, b []byte, truncations bool) {
		s[prefix] = b
		if truncations {
			for n := range len(b) {
				s[fmt.Sprintf("%s-trunc-%04d", prefix, n)] = b[:n]
			}
		}
	}
	addAll(seeds["FuzzDecode"], "full", reqs[0], false)
	addAll(seeds["FuzzDecode"], "small", reqs[1], true)
	addAll(seeds["FuzzDecode"], "zero", reqs[2], false)
	addAll(seeds["FuzzDecode"], "medium", medium, true)
	addAll(seeds["FuzzDecodeResponse"], "full", resps[0], false)
	addAll(seeds["FuzzDecodeResponse"], "zero", resps[1], true)
	addAll(seeds["FuzzDecodeResponse"], "one-row", rawResponse([]byte{0x92, 0x01, 0xa1, 'x'}), true)
	addAll(seeds["FuzzDecodeRow"], "full", rows[0], false)
	addAll(seeds["FuzzDecodeRow"], "small", rows[1], true)
	addAll(seeds["FuzzDecodeRow"], "nested", mustEncodeRow(t, map[string]any{"m": map[string]any{"l": []any{1, "s", []byte{2}}}, "f": 0.5}), true)

	for fuzz, s := range seeds {
		dir := filepath.Join("testdata", "fuzz", fuzz)
		// Only generated seeds are rewritten; crashers the fuzzer saved
		// (named by hash) stay.
		old, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
		for _, p := range old {
			require.NoError(t, os.Remove(p))
		}
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for name, b := range s {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(body), 0o644))
		}
		t.Logf("%s: %d seeds", fuzz, len(s))
	}
}

func mustEncodeRow(t *testing.T, row map[string]any) []byte {
	t.Helper()
	b, err := EncodeRow(row)
	require.NoError(t, err)
	return b
}

// FuzzColumnDecoder: the column decoder (its flat fast path included)
// agrees with DecodeRow on any bytes — refuses what it refuses, and picks
// the same values.
func FuzzColumnDecoder(f *testing.F) {
	for _, row := range []map[string]any{
		{"a": int64(1), "b": "x", "c": []byte("y"), "d": 1.5, "e": nil, "f": true},
		{"a": int64(-200), "b": uint64(math.MaxUint64), "c": float32(2.5), "d": int64(70000)},
		{"a": map[string]any{"x": int64(1)}, "b": []any{int64(1)}},
	} {
		b, err := EncodeRow(row)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02})              // a repeated: the last wins
	f.Add([]byte{0x81, 0xa1, 'a', 0xd9, 0x05, 'x'})                    // a str8 that runs out
	f.Add([]byte{0x81, 0xa1, 'a', 0xd3, 0, 0, 0, 0, 0, 0, 0, 1, 0xc0}) // trailing byte
	cols := []string{"a", "b", "c", "d", "e", "f"}
	f.Fuzz(func(t *testing.T, b []byte) {
		cd := newColumnDecoder(cols)
		dst := make([]any, len(cols))
		err := cd.decode(b, dst)
		row, rerr := DecodeRow(b)
		if rerr != nil {
			require.Error(t, err, "DecodeRow refuses: %v", rerr)
			return
		}
		require.NoError(t, err)
		for i, c := range cols {
			require.Equal(t, row[c], dst[i], "column %q", c)
		}
	})
}

// FuzzDecodeJSON: DecodeJSON never panics and refuses with ErrMalformed;
// what it accepts is a request Decode accepts too, once encoded.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"ranges": [{"start": "a", "end": "b"}], "filter": {"op": "eq", "args": [{"op": "col", "col": "a"}, {"op": "const", "value": 1.5}]}}`,
		`{"ranges": [{}], "aggs": [{"func": "count"}], "group_by": ["a"], "paging_size": 3}`,
		`{"ranges": [{}], "filter": null, "filter": null}`,
		`[{"a": {"b": [1, {"c": 2, "c": 3}]}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeJSON(b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			require.Nil(t, r)
			return
		}
		e, err := Encode(r)
		require.NoError(t, err)
		_, err = Decode(e)
		require.NoError(t, err)
	})
}
