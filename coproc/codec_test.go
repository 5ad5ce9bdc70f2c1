package coproc

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var codecSeed = flag.Uint64("codec-seed", 0, "seed of the randomized codec tests (0 = from the clock)")

// fullRequest sets every field of a Request, with a filter holding a
// constant of every type. small and negative are the forms of 42 and -7
// (Go ints going in, int64 coming out).
func fullRequest(small, negative any) *Request {
	col := func(name string) *Expr { return &Expr{Op: "col", Col: name} }
	cnst := func(v any) *Expr { return &Expr{Op: "const", Value: v} }
	cmp := func(op, name string, v any) *Expr { return &Expr{Op: op, Args: []*Expr{col(name), cnst(v)}} }
	return &Request{
		Ranges: []KeyRange{
			{Start: []byte("a"), End: []byte("m")},
			{End: []byte{0xff, 0x00}},
			{Start: []byte("x")},
		},
		Filter: &Expr{Op: "and", Args: []*Expr{
			cmp("eq", "nil", nil),
			cmp("eq", "t", true),
			cmp("ne", "f", false),
			cmp("lt", "i", small),
			cmp("ge", "neg", negative),
			cmp("le", "zero", int64(0)),
			cmp("le", "big", uint64(math.MaxUint64)),
			cmp("gt", "fl", 3.25),
			cmp("ne", "empty", ""),
			cmp("prefix", "s", "pre"),
			cmp("eq", "_key", []byte{0, 1, 0xff}),
			{Op: "in", Args: []*Expr{col("x")}, Value: []any{int64(1), "two", []byte("3"), 4.5, nil, true, []any{}}},
			{Op: "not", Args: []*Expr{{Op: "isnull", Args: []*Expr{col("z")}}}},
			{Op: "or", Args: []*Expr{cmp("eq", "m", map[string]any{"k": "v"}), cmp("eq", "e", []any{})}},
		}},
		Columns:    []string{"a", "b", "_key"},
		GroupBy:    []string{"g"},
		Aggs:       []Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "v", As: "total"}, {Func: "max", Col: "v"}},
		OrderBy:    []Order{{Col: "total", Desc: true}, {Col: "g"}},
		Limit:      10,
		PagingSize: 100,
		Desc:       true,
	}
}

// fullRow holds a value of every type a row carries.
func fullRow() map[string]any {
	return map[string]any{
		"nil":   nil,
		"t":     true,
		"f":     false,
		"i":     int64(-5),
		"zero":  int64(0),
		"maxi":  int64(math.MaxInt64),
		"mini":  int64(math.MinInt64),
		"u":     uint64(math.MaxUint64),
		"fl":    1.5,
		"tiny":  1e-300,
		"s":     "str",
		"es":    "",
		"b":     []byte("bin"),
		"eb":    []byte{},
		"list":  []any{int64(1), "a", []any{nil, false}, map[string]any{"x": 2.5}},
		"elist": []any{},
		"map":   map[string]any{"k": int64(1), "n": map[string]any{"deep": []byte{1}}},
		"emap":  map[string]any{},
		"":      "empty key",
	}
}

func fullResponse() *Response {
	return &Response{
		Rows:      []map[string]any{fullRow(), {"count": int64(3)}, {}},
		ResumeKey: []byte("next"),
		Stats: Stats{
			RowsScanned: 10, RowsReturned: 3, BytesRead: 1 << 40,
			Steps: 4, Yields: 2, WaitTime: 3 * time.Millisecond, ExecTime: time.Second,
		},
	}
}

func TestEncode_RoundTrip(t *testing.T) {
	b, err := Encode(fullRequest(42, -7))
	require.NoError(t, err)
	got, err := Decode(b)
	require.NoError(t, err)
	require.Equal(t, fullRequest(int64(42), int64(-7)), got)

	// Deterministic: the same request encodes to the same bytes.
	b2, err := Encode(got)
	require.NoError(t, err)
	require.Equal(t, b, b2)
}

func TestEncode_ZeroRequest(t *testing.T) {
	b, err := Encode(&Request{})
	require.NoError(t, err)
	got, err := Decode(b)
	require.NoError(t, err)
	require.Equal(t, &Request{}, got)
}

func TestEncode_ZeroValuesSurvive(t *testing.T) {
	// msgpack's omitempty looks through interfaces: with it on Value,
	// these would all have come back nil.
	for _, v := range []any{false, int64(0), 0.0, "", []byte{}, []any{}, map[string]any{}} {
		b, err := Encode(&Request{Filter: &Expr{Op: "const", Value: v}})
		require.NoError(t, err)
		got, err := Decode(b)
		require.NoError(t, err)
		require.Equal(t, v, got.Filter.Value, "%#v", v)
	}
}

func TestEncodeResponse_RoundTrip(t *testing.T) {
	b, err := EncodeResponse(fullResponse())
	require.NoError(t, err)
	got, err := DecodeResponse(b)
	require.NoError(t, err)
	require.Equal(t, fullResponse(), got)

	b, err = EncodeResponse(&Response{})
	require.NoError(t, err)
	got, err = DecodeResponse(b)
	require.NoError(t, err)
	require.Equal(t, &Response{}, got)
}

func TestEncodeRow_RoundTrip(t *testing.T) {
	b, err := EncodeRow(fullRow())
	require.NoError(t, err)
	got, err := DecodeRow(b)
	require.NoError(t, err)
	require.Equal(t, fullRow(), got)

	for range 5 { // map order is random; the bytes must not be
		b2, err := EncodeRow(fullRow())
		require.NoError(t, err)
		require.Equal(t, b, b2)
	}
}

func TestEncodeRow_Nil(t *testing.T) {
	b, err := EncodeRow(nil)
	require.NoError(t, err)
	got, err := DecodeRow(b)
	require.NoError(t, err)
	require.Equal(t, map[string]any{}, got)
}

func TestDecodeRow_DoesNotAlias(t *testing.T) {
	b, err := EncodeRow(map[string]any{"s": "abc", "b": []byte("xyz")})
	require.NoError(t, err)
	got, err := DecodeRow(b)
	require.NoError(t, err)
	dst := make([]any, 2)
	require.NoError(t, newColumnDecoder([]string{"s", "b"}).decode(b, dst))
	clear(b)
	require.Equal(t, map[string]any{"s": "abc", "b": []byte("xyz")}, got)
	require.Equal(t, []any{"abc", []byte("xyz")}, dst)
}

// rawNumbers are msgpack encodings of numbers in every width, written
// by hand because a compact encoder would not produce most of them.
var rawNumbers = []struct {
	name string
	enc  []byte
	want any
}{
	{"positive fixint", []byte{0x05}, int64(5)},
	{"negative fixint", []byte{0xfb}, int64(-5)},
	{"int8", []byte{0xd0, 0x80}, int64(-128)},
	{"int16", []byte{0xd1, 0xff, 0x00}, int64(-256)},
	{"int32", []byte{0xd2, 0x80, 0, 0, 0}, int64(math.MinInt32)},
	{"int64", []byte{0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, int64(math.MinInt64)},
	{"int64 positive", []byte{0xd3, 0, 0, 0, 0, 0, 0, 0, 7}, int64(7)},
	{"uint8", []byte{0xcc, 0xc8}, int64(200)},
	{"uint16", []byte{0xcd, 0xff, 0xff}, int64(65535)},
	{"uint32", []byte{0xce, 0xff, 0xff, 0xff, 0xff}, int64(math.MaxUint32)},
	{"uint64 small", []byte{0xcf, 0, 0, 0, 0, 0, 0, 0, 5}, int64(5)},
	{"uint64 max int64", []byte{0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, int64(math.MaxInt64)},
	{"uint64 above int64", []byte{0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0}, uint64(1 << 63)},
	{"float32", []byte{0xca, 0x3f, 0xc0, 0, 0}, 1.5},
	{"float64", []byte{0xcb, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18}, math.Pi},
}

// msgpack building blocks for hand-written messages.
func fixstr(s string) []byte { return append([]byte{0xa0 | byte(len(s))}, s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// rawRow is {"v": v}; rawRequest is {"filter": {"op": "const", "value": v}};
// rawResponse is {"rows": [{"v": v}]}.
func rawRow(v []byte) []byte { return cat([]byte{0x81}, fixstr("v"), v) }

func rawRequest(v []byte) []byte {
	return cat([]byte{0x81}, fixstr("filter"), []byte{0x82}, fixstr("op"), fixstr("const"), fixstr("value"), v)
}

func rawResponse(v []byte) []byte { return cat([]byte{0x81}, fixstr("rows"), []byte{0x91}, rawRow(v)) }

func TestDecode_LooseNumbers(t *testing.T) {
	for _, tc := range rawNumbers {
		t.Run(tc.name, func(t *testing.T) {
			row, err := DecodeRow(rawRow(tc.enc))
			require.NoError(t, err)
			assert.Equal(t, tc.want, row["v"], "DecodeRow")

			dst := make([]any, 1)
			require.NoError(t, newColumnDecoder([]string{"v"}).decode(rawRow(tc.enc), dst))
			assert.Equal(t, tc.want, dst[0], "columnDecoder")

			req, err := Decode(rawRequest(tc.enc))
			require.NoError(t, err)
			assert.Equal(t, tc.want, req.Filter.Value, "Decode")

			resp, err := DecodeResponse(rawResponse(tc.enc))
			require.NoError(t, err)
			assert.Equal(t, tc.want, resp.Rows[0]["v"], "DecodeResponse")

			// Nested in a list, too.
			list := cat([]byte{0x92}, tc.enc, tc.enc)
			req, err = Decode(rawRequest(list))
			require.NoError(t, err)
			assert.Equal(t, []any{tc.want, tc.want}, req.Filter.Value, "Decode list")
		})
	}
}

func TestEncodeRow_LooseNumbers(t *testing.T) {
	in := map[string]any{
		"int": 7, "int8": int8(-3), "int16": int16(-300), "int32": int32(1 << 20), "int64": int64(-1 << 40),
		"uint": uint(8), "uint8": uint8(200), "uint16": uint16(60000), "uint32": uint32(1 << 31),
		"uint64": uint64(5), "uint64max": uint64(math.MaxUint64), "float32": float32(1.5), "float64": 0.1,
	}
	want := map[string]any{
		"int": int64(7), "int8": int64(-3), "int16": int64(-300), "int32": int64(1 << 20), "int64": int64(-1 << 40),
		"uint": int64(8), "uint8": int64(200), "uint16": int64(60000), "uint32": int64(1 << 31),
		"uint64": int64(5), "uint64max": uint64(math.MaxUint64), "float32": 1.5, "float64": 0.1,
	}
	b, err := EncodeRow(in)
	require.NoError(t, err)
	got, err := DecodeRow(b)
	require.NoError(t, err)
	require.Equal(t, want, got)

	// And in a request's values.
	r, err := Encode(&Request{Filter: &Expr{Op: "const", Value: []any{int8(-3), uint16(7), float32(0.5)}}})
	require.NoError(t, err)
	req, err := Decode(r)
	require.NoError(t, err)
	require.Equal(t, []any{int64(-3), int64(7), 0.5}, req.Filter.Value)
}

// decoders runs each decoder over b, for tables that every one must
// refuse alike.
var decoders = []struct {
	name   string
	decode func(b []byte) error
}{
	{"Decode", func(b []byte) error { _, err := Decode(b); return err }},
	{"DecodeResponse", func(b []byte) error { _, err := DecodeResponse(b); return err }},
	{"DecodeRow", func(b []byte) error { _, err := DecodeRow(b); return err }},
	{"columnDecoder", func(b []byte) error {
		return newColumnDecoder([]string{"a", "v", "rows", "filter"}).decode(b, make([]any, 4))
	}},
}

// nested is a map {"a": v} whose value is depth-1 levels of single-element
// arrays around nil, so the whole message nests depth deep.
func nested(depth int) []byte {
	return cat([]byte{0x81}, fixstr("a"), bytes.Repeat([]byte{0x91}, depth-1), []byte{0xc0})
}

func hostileInputs() []struct {
	name string
	in   []byte
	want error
} {
	inMap := func(v ...byte) []byte { return cat([]byte{0x81}, fixstr("a"), v) }
	return []struct {
		name string
		in   []byte
		want error
	}{
		{"map32 4G", []byte{0xdf, 0xff, 0xff, 0xff, 0xff}, ErrTruncated},
		{"map32 4G nested", inMap(0xdf, 0xff, 0xff, 0xff, 0xff), ErrTruncated},
		{"map16 64K", []byte{0xde, 0xff, 0xff}, ErrTruncated},
		{"map16 64K nested", inMap(0xde, 0xff, 0xff), ErrTruncated},
		{"fixmap 15, 1 pair", cat([]byte{0x8f}, fixstr("a"), []byte{0xc0}), ErrTruncated},
		{"array32 4G", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, ErrTruncated},
		{"array32 4G nested", inMap(0xdd, 0xff, 0xff, 0xff, 0xff), ErrTruncated},
		{"array16 64K nested", inMap(0xdc, 0xff, 0xff), ErrTruncated},
		{"str32 4G", []byte{0xdb, 0xff, 0xff, 0xff, 0xff}, ErrTruncated},
		{"str32 4G nested", inMap(0xdb, 0xff, 0xff, 0xff, 0xff), ErrTruncated},
		{"str32 4G key", []byte{0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 0xc0}, ErrTruncated},
		{"str16 nested", inMap(0xda, 0xff, 0xff, 'x'), ErrTruncated},
		{"str8 nested", inMap(0xd9, 0xff, 'x'), ErrTruncated},
		{"bin32 4G nested", inMap(0xc6, 0xff, 0xff, 0xff, 0xff), ErrTruncated},
		{"bin16 nested", inMap(0xc5, 0xff, 0xff), ErrTruncated},
		{"bin8 nested", inMap(0xc4, 0x10, 1, 2), ErrTruncated},
		{"ext32 4G nested", inMap(0xc9, 0xff, 0xff, 0xff, 0xff, 0x01), ErrTruncated},
		{"ext8 nested", inMap(0xc7, 0x01, 0x01, 0x00), ErrUnsupportedType},
		{"timestamp ext nested", inMap(0xd6, 0xff, 0, 0, 0, 1), ErrUnsupportedType},
		{"fixext16 short", inMap(0xd8, 0x01, 0x00), ErrTruncated},
		{"reserved 0xc1", inMap(0xc1), ErrUnsupportedType},
		{"int64 short", inMap(0xd3, 0x01), ErrTruncated},
		{"float64 short", inMap(0xcb, 0x01, 0x02), ErrTruncated},
		{"uint32 short", inMap(0xce), ErrTruncated},
		{"deep 3 MB", inMap(bytes.Repeat([]byte{0x91}, 3<<20)...), ErrTooDeep},
		{"deep maps", bytes.Repeat(cat([]byte{0x81}, fixstr("a")), 10_000), ErrTooDeep},
		{"just over MaxDepth+2", nested(MaxDepth + 3), ErrTooDeep},
		{"empty", nil, ErrTruncated},
		{"nil", []byte{0xc0}, ErrNotMap},
		{"array", []byte{0x90}, ErrNotMap},
		{"int", []byte{0x01}, ErrNotMap},
		{"string", fixstr("abc"), ErrNotMap},
		{"int key", []byte{0x81, 0x01, 0xc0}, ErrNotMap},
		{"nil key", []byte{0x81, 0xc0, 0xc0}, ErrNotMap},
		{"bin key", []byte{0x81, 0xc4, 0x01, 'a', 0xc0}, ErrNotMap},
		{"trailing byte", []byte{0x80, 0x00}, ErrTrailingBytes},
		{"two maps", []byte{0x80, 0x80}, ErrTrailingBytes},
		{"missing value", cat([]byte{0x81}, fixstr("a")), ErrTruncated},
	}
}

func TestDecode_Hostile(t *testing.T) {
	for _, tc := range hostileInputs() {
		for _, d := range decoders {
			t.Run(tc.name+"/"+d.name, func(t *testing.T) {
				err := d.decode(tc.in)
				require.ErrorIs(t, err, tc.want)
				require.ErrorIs(t, err, ErrMalformed)
			})
		}
	}
}

func TestDecode_DepthLimit(t *testing.T) {
	// Rows and requests nest up to MaxDepth; a response two more, so that
	// it can hold any row.
	for _, d := range decoders {
		limit := MaxDepth
		if d.name == "DecodeResponse" {
			limit = MaxDepth + 2
		}
		t.Run(d.name, func(t *testing.T) {
			err := d.decode(nested(limit))
			if d.name == "Decode" {
				// Past the depth check, but "a" is no field of a request.
				require.ErrorIs(t, err, ErrMalformed)
				require.NotErrorIs(t, err, ErrTooDeep)
			} else {
				require.NoError(t, err)
			}
			require.ErrorIs(t, d.decode(nested(limit+1)), ErrTooDeep)
		})
	}

	// A request whose filter value nests exactly MaxDepth deep decodes;
	// one level more does not.
	value := func(depth int) []byte { // request map, filter map, then arrays
		return rawRequest(cat(bytes.Repeat([]byte{0x91}, depth-2), []byte{0x01}))
	}
	r, err := Decode(value(MaxDepth))
	require.NoError(t, err)
	b, err := Encode(r)
	require.NoError(t, err)
	require.Equal(t, r.Filter.Value, mustDecode(t, b).Filter.Value)
	_, err = Decode(value(MaxDepth + 1))
	require.ErrorIs(t, err, ErrTooDeep)
}

func mustDecode(t *testing.T, b []byte) *Request {
	t.Helper()
	r, err := Decode(b)
	require.NoError(t, err)
	return r
}

func TestDecode_SizeCaps(t *testing.T) {
	caps := map[string]int{
		"Decode": MaxRequestBytes, "DecodeResponse": MaxResponseBytes,
		"DecodeRow": MaxRowBytes, "columnDecoder": MaxRowBytes,
	}
	// One buffer for all: fresh 64 MiB costs more than the decoding.
	big := make([]byte, MaxResponseBytes+1)
	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			// A map padded by one long string to exactly the cap passes
			// the size check; one byte more does not, whatever it holds.
			limit := caps[d.name]
			hdr := cat([]byte{0x81}, fixstr("a"), []byte{0xdb, 0, 0, 0, 0})
			pad := limit - len(hdr)
			hdr[len(hdr)-4], hdr[len(hdr)-3], hdr[len(hdr)-2], hdr[len(hdr)-1] = byte(pad>>24), byte(pad>>16), byte(pad>>8), byte(pad)
			copy(big, hdr)
			require.NoError(t, check(big[:limit], limit, MaxDepth, false))
			if limit <= MaxRowBytes {
				// Cheap enough to decode for real (for Decode, "a" is no
				// field of a request, but it got that far).
				require.NotErrorIs(t, d.decode(big[:limit]), ErrTooLarge)
			}
			err := d.decode(big[:limit+1])
			require.ErrorIs(t, err, ErrTooLarge)
			require.ErrorIs(t, err, ErrMalformed)
		})
	}
}

func TestDecode_UnknownField(t *testing.T) {
	b := cat([]byte{0x81}, fixstr("filtr"), []byte{0x80})
	_, err := Decode(b)
	require.ErrorIs(t, err, ErrMalformed)
	require.Contains(t, err.Error(), "filtr")

	// Nested, too.
	_, err = Decode(cat([]byte{0x81}, fixstr("filter"), []byte{0x81}, fixstr("colum"), fixstr("a")))
	require.ErrorIs(t, err, ErrMalformed)

	// A response ignores them: a newer server may add fields.
	resp, err := DecodeResponse(cat([]byte{0x82}, fixstr("new"), []byte{0x01}, fixstr("resume_key"), []byte{0xc4, 1, 'k'}))
	require.NoError(t, err)
	require.Equal(t, &Response{ResumeKey: []byte("k")}, resp)
}

func TestDecode_DuplicateKey(t *testing.T) {
	filter := func(op string) []byte { return cat(fixstr("filter"), []byte{0x81}, fixstr("op"), fixstr(op)) }
	_, err := Decode(cat([]byte{0x82}, filter("eq"), filter("ne")))
	require.ErrorIs(t, err, ErrDuplicateKey)

	// In a value's map, and past the small-map path.
	m := []byte{0xde, 0, 20}
	for i := range 20 {
		m = append(m, fixstr(fmt.Sprint(i%19))...)
		m = append(m, 0xc0)
	}
	_, err = Decode(rawRequest(m))
	require.ErrorIs(t, err, ErrDuplicateKey)

	// Rows keep the last value, the column decoder too.
	row := []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02}
	got, err := DecodeRow(row)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": int64(2)}, got)
	dst := make([]any, 1)
	require.NoError(t, newColumnDecoder([]string{"a"}).decode(row, dst))
	require.Equal(t, []any{int64(2)}, dst)
}

func TestDecode_TypeMismatch(t *testing.T) {
	for name, b := range map[string][]byte{
		"ranges is a string": cat([]byte{0x81}, fixstr("ranges"), fixstr("x")),
		"filter is an int":   cat([]byte{0x81}, fixstr("filter"), []byte{0x01}),
		"op is a map":        cat([]byte{0x81}, fixstr("filter"), []byte{0x81}, fixstr("op"), []byte{0x80}),
		"limit is a string":  cat([]byte{0x81}, fixstr("limit"), fixstr("10")),
		"args holds ints":    cat([]byte{0x81}, fixstr("filter"), []byte{0x81}, fixstr("args"), []byte{0x91, 0x01}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(b)
			require.ErrorIs(t, err, ErrMalformed)
		})
	}
}

// validMessages are encodings that decode, for truncation tests.
func validMessages(t testing.TB) (reqs, resps, rows [][]byte) {
	enc := func(b []byte, err error) []byte {
		require.NoError(t, err)
		return b
	}
	reqs = [][]byte{
		enc(Encode(fullRequest(42, -7))),
		enc(Encode(&Request{Ranges: []KeyRange{{Start: []byte("a")}}, Limit: 3})),
		enc(Encode(&Request{})),
	}
	resps = [][]byte{enc(EncodeResponse(fullResponse())), enc(EncodeResponse(&Response{}))}
	rows = [][]byte{enc(EncodeRow(fullRow())), enc(EncodeRow(map[string]any{"a": int64(1), "b": "x"}))}
	return reqs, resps, rows
}

func TestDecode_Truncations(t *testing.T) {
	reqs, resps, rows := validMessages(t)
	cd := newColumnDecoder([]string{"s", "list"})
	dst := make([]any, 2)
	// msgpack is prefix-free: no proper prefix of a value is a value.
	for _, b := range reqs {
		for n := range len(b) {
			_, err := Decode(b[:n])
			require.ErrorIs(t, err, ErrMalformed, "request prefix %d of %d", n, len(b))
		}
	}
	for _, b := range resps {
		for n := range len(b) {
			_, err := DecodeResponse(b[:n])
			require.ErrorIs(t, err, ErrMalformed, "response prefix %d of %d", n, len(b))
		}
	}
	for _, b := range rows {
		for n := range len(b) {
			_, err := DecodeRow(b[:n])
			require.ErrorIs(t, err, ErrMalformed, "row prefix %d of %d", n, len(b))
			err = cd.decode(b[:n], dst)
			require.ErrorIs(t, err, ErrMalformed, "row prefix %d of %d", n, len(b))
			require.Equal(t, []any{nil, nil}, dst)
		}
	}
}

func TestDecode_TrailingBytes(t *testing.T) {
	reqs, resps, rows := validMessages(t)
	_, err := Decode(append(slices.Clone(reqs[0]), 0xc0))
	require.ErrorIs(t, err, ErrTrailingBytes)
	_, err = DecodeResponse(append(slices.Clone(resps[0]), 0x00))
	require.ErrorIs(t, err, ErrTrailingBytes)
	_, err = DecodeRow(append(slices.Clone(rows[0]), 0x80))
	require.ErrorIs(t, err, ErrTrailingBytes)
}

// TestDecode_BombAllocatesLittle checks that a header claiming 4 GiB costs
// nothing like it: msgpack alone would allocate the whole claim (or die).
func TestDecode_BombAllocatesLittle(t *testing.T) {
	bombs := [][]byte{
		{0xdf, 0xff, 0xff, 0xff, 0xff},
		{0xdd, 0xff, 0xff, 0xff, 0xff},
		{0xdb, 0xff, 0xff, 0xff, 0xff},
		{0xc6, 0xff, 0xff, 0xff, 0xff},
		{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
		{0x81, 0xa1, 'a', 0xdf, 0xff, 0xff, 0xff, 0xff},
		{0x81, 0xa1, 'a', 0xdd, 0xff, 0xff, 0xff, 0xff},
		{0x81, 0xa1, 'a', 0xc6, 0xff, 0xff, 0xff, 0xff},
	}
	const rounds = 10
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range rounds {
		for _, b := range bombs {
			for _, d := range decoders {
				require.Error(t, d.decode(b))
			}
		}
	}
	runtime.ReadMemStats(&after)
	perDecode := (after.TotalAlloc - before.TotalAlloc) / uint64(rounds*len(bombs)*len(decoders))
	t.Logf("%d bytes allocated per bomb decode", perDecode)
	require.Less(t, perDecode, uint64(1<<20))
}

func TestColumnDecoder_Picks(t *testing.T) {
	row := map[string]any{
		"a":      int64(1),
		"skipme": map[string]any{"x": []any{int64(1), map[string]any{"y": []byte("z")}}, "w": "v"},
		"list":   []any{[]any{[]any{"deep"}}, map[string]any{}},
		"s":      "str",
		"b":      []byte{9},
		"n":      nil,
		"big":    strings.Repeat("x", 70000),
		"f":      2.5,
	}
	for i := range 50 {
		row[fmt.Sprintf("other%02d", i)] = []any{int64(i), map[string]any{"k": i}}
	}
	b, err := EncodeRow(row)
	require.NoError(t, err)

	for _, cols := range [][]string{
		{"s"},
		{"missing"},
		{"list", "missing", "a", "s", "a"},
		{"f", "b", "n", "big", "skipme", "other07", "other49", "missing", "a", "list", "s"}, // the map path
		{},
	} {
		t.Run(strings.Join(cols, ","), func(t *testing.T) {
			dst := make([]any, len(cols))
			for i := range dst {
				dst[i] = "stale"
			}
			require.NoError(t, newColumnDecoder(cols).decode(b, dst))
			for i, c := range cols {
				want := normalize(row[c])
				assert.Equal(t, want, dst[i], c)
			}
		})
	}
}

func TestColumnDecoder_NotMap(t *testing.T) {
	cd := newColumnDecoder([]string{"a"})
	for _, b := range [][]byte{{0xc0}, {0x90}, {0x01}, fixstr("a"), {0xc4, 0x00}} {
		dst := []any{"stale"}
		err := cd.decode(b, dst)
		require.ErrorIs(t, err, ErrNotMap)
		require.Equal(t, []any{nil}, dst)
	}
}

func TestColumnDecoder_HostileAfterColumn(t *testing.T) {
	// The wanted column comes first and decodes; the bomb after it must
	// still fail the row, and leave dst clean.
	b := cat([]byte{0x82}, fixstr("a"), []byte{0x01}, fixstr("z"), []byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	dst := make([]any, 1)
	require.ErrorIs(t, newColumnDecoder([]string{"a"}).decode(b, dst), ErrTruncated)
	require.Equal(t, []any{nil}, dst)
}

func TestColumnDecoder_WrongDst(t *testing.T) {
	require.Panics(t, func() { _ = newColumnDecoder([]string{"a"}).decode([]byte{0x80}, nil) })
}

// TestColumnDecoder_AgreesWithDecodeRow compares the two on random rows.
func TestColumnDecoder_AgreesWithDecodeRow(t *testing.T) {
	seed := *codecSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("-codec-seed=%d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for range 200 {
		row := randomRow(rng, 3)
		b, err := EncodeRow(row)
		require.NoError(t, err)
		full, err := DecodeRow(b)
		require.NoError(t, err)
		var cols []string
		for k := range full {
			if rng.IntN(2) == 0 {
				cols = append(cols, k)
			}
		}
		cols = append(cols, "absent")
		dst := make([]any, len(cols))
		require.NoError(t, newColumnDecoder(cols).decode(b, dst))
		for i, c := range cols {
			require.Equal(t, full[c], dst[i], c)
		}
	}
}

func randomRow(rng *rand.Rand, depth int) map[string]any {
	row := make(map[string]any)
	for range rng.IntN(20) {
		row[fmt.Sprintf("c%d", rng.IntN(40))] = randomValue(rng, depth)
	}
	return row
}

func randomValue(rng *rand.Rand, depth int) any {
	n := 9
	if depth > 0 {
		n = 11
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return rng.Int64() >> rng.IntN(64)
	case 3:
		return -rng.Int64() >> rng.IntN(64)
	case 4:
		return rng.Uint64()
	case 5:
		return rng.NormFloat64()
	case 6:
		return float32(rng.NormFloat64())
	case 7:
		return strings.Repeat("s", rng.IntN(300))
	case 8:
		return bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(70))
	case 9:
		s := make([]any, rng.IntN(5))
		for i := range s {
			s[i] = randomValue(rng, depth-1)
		}
		return s
	default:
		return randomRow(rng, depth-1)
	}
}

func TestNormalize(t *testing.T) {
	type myString string
	type myInt int16
	for _, tc := range []struct {
		in, want any
	}{
		{nil, nil},
		{true, true},
		{7, int64(7)},
		{int8(-1), int64(-1)},
		{int16(-2), int64(-2)},
		{int32(-3), int64(-3)},
		{int64(-4), int64(-4)},
		{uint(5), int64(5)},
		{uint8(6), int64(6)},
		{uint16(7), int64(7)},
		{uint32(8), int64(8)},
		{uint64(9), int64(9)},
		{uint64(math.MaxUint64), uint64(math.MaxUint64)},
		{uint(math.MaxUint64), uint64(math.MaxUint64)},
		{float32(0.5), 0.5},
		{0.25, 0.25},
		{"s", "s"},
		{[]byte("b"), []byte("b")},
		{[]byte(nil), nil},
		{[]any(nil), nil},
		{map[string]any(nil), nil},
		{myString("m"), "m"},
		{myInt(3), int64(3)},
		{[]string{"a", "b"}, []any{"a", "b"}},
		{[]int{1, 2}, []any{int64(1), int64(2)}},
		{[2]byte{1, 2}, []byte{1, 2}},
		{[]any{int8(1), []any{uint8(2)}}, []any{int64(1), []any{int64(2)}}},
		{map[string]any{"a": float32(1)}, map[string]any{"a": 1.0}},
		{map[string]int{"a": 1}, map[string]any{"a": int64(1)}},
		{ptr(3), int64(3)},
		{(*int)(nil), nil},
	} {
		t.Run(fmt.Sprintf("%T", tc.in), func(t *testing.T) {
			require.Equal(t, tc.want, normalize(tc.in))
			require.True(t, isNormal(normalize(tc.in)) || normalize(tc.in) == nil)
		})
	}

	// Other types come back unchanged, for the caller to refuse.
	tm := time.Unix(1, 0)
	require.Equal(t, tm, normalize(tm))
	m := map[int]string{1: "a"}
	require.Equal(t, m, normalize(m))
}

func TestNormalize_DoesNotModify(t *testing.T) {
	in := []any{int8(1), map[string]any{"a": uint16(2)}}
	out := normalize(in)
	require.Equal(t, []any{int8(1), map[string]any{"a": uint16(2)}}, in)
	require.Equal(t, []any{int64(1), map[string]any{"a": int64(2)}}, out)

	// A value already normal is returned as is, not copied.
	normal := []any{int64(1), "a"}
	require.Same(t, &normal[0], &normalize(normal).([]any)[0])
}

func ptr[T any](v T) *T { return &v }

func TestEncode_Refuses(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	list := []any{nil}
	list[0] = list
	loop := &Expr{Op: "not"}
	loop.Args = []*Expr{loop}
	type node struct{ Next *node }
	n := &node{}
	n.Next = n

	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"row cycle", errOf(EncodeRow(cyclic)), ErrTooDeep},
		{"list cycle", errOf(EncodeRow(map[string]any{"l": list})), ErrTooDeep},
		{"struct cycle", errOf(EncodeRow(map[string]any{"n": n})), ErrTooDeep},
		{"filter cycle", errOf(Encode(&Request{Filter: loop})), ErrTooDeep},
		{"response row cycle", errOf(EncodeResponse(&Response{Rows: []map[string]any{cyclic}})), ErrTooDeep},
		{"row too deep", errOf(EncodeRow(map[string]any{"a": deepList(MaxDepth)})), ErrTooDeep},
		{"time in row", errOf(EncodeRow(map[string]any{"t": time.Now()})), ErrUnsupportedType},
		{"time in filter", errOf(Encode(&Request{Filter: &Expr{Op: "const", Value: time.Now()}})), ErrUnsupportedType},
		{"int keys", errOf(EncodeRow(map[string]any{"m": map[int]int{1: 2}})), ErrNotMap},
		{"row too large", errOf(EncodeRow(map[string]any{"b": make([]byte, MaxRowBytes)})), ErrTooLarge},
		{"request too large", errOf(Encode(&Request{Columns: []string{strings.Repeat("x", MaxRequestBytes)}})), ErrTooLarge},
		{"nil request", errOf(Encode(nil)), ErrNotMap},
		{"nil response", errOf(EncodeResponse(nil)), ErrNotMap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.err, tc.want)
		})
	}

	// The deepest row that encodes also fits in a response.
	row := map[string]any{"a": deepList(MaxDepth - 1)}
	b, err := EncodeRow(row)
	require.NoError(t, err)
	got, err := DecodeRow(b)
	require.NoError(t, err)
	require.Equal(t, row, got)
	rb, err := EncodeResponse(&Response{Rows: []map[string]any{row}})
	require.NoError(t, err)
	resp, err := DecodeResponse(rb)
	require.NoError(t, err)
	require.Equal(t, row, resp.Rows[0])
}

func errOf(_ any, err error) error { return err }

// deepList is n nested lists around an int.
func deepList(n int) any {
	var v any = int64(1)
	for range n {
		v = []any{v}
	}
	return v
}

func ExampleEncode() {
	b, err := Encode(&Request{
		Ranges: []KeyRange{{Start: []byte("user/"), End: []byte("user0")}},
		Filter: &Expr{Op: "gt", Args: []*Expr{{Op: "col", Col: "age"}, {Op: "const", Value: 30}}},
		Aggs:   []Agg{{Func: "count", As: "n"}},
	})
	if err != nil {
		panic(err)
	}
	r, err := Decode(b)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %T %v\n", r.Ranges[0].Start, r.Filter.Args[1].Value, r.Filter.Args[1].Value)
	// Output: user/ int64 30
}

func ExampleDecode_hostile() {
	// A map header claiming 4 billion pairs, in five bytes.
	_, err := Decode([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	fmt.Println(errors.Is(err, ErrMalformed))
	fmt.Println(err)
	// Output:
	// true
	// coproc: decode request: coproc: truncated message: map at offset 0 declares 4294967295 elements, 0 bytes remain
}

func ExampleEncodeRow() {
	b, err := EncodeRow(map[string]any{"name": "ada", "age": uint8(36), "score": float32(0.5)})
	if err != nil {
		panic(err)
	}
	row, err := DecodeRow(b)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%v %T %T\n", row, row["age"], row["score"])
	// Output: map[age:36 name:ada score:0.5] int64 float64
}

func ExampleEncodeResponse() {
	b, err := EncodeResponse(&Response{
		Rows:      []map[string]any{{"n": 3}},
		ResumeKey: []byte("k42"),
		Stats:     Stats{RowsScanned: 10, RowsReturned: 1},
	})
	if err != nil {
		panic(err)
	}
	r, err := DecodeResponse(b)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Rows, string(r.ResumeKey), r.Stats.RowsScanned)
	// Output: [map[n:3]] k42 10
}
