package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		hex     bool
		want    []byte
		wantErr string
	}{
		{"text", "user:42", false, []byte("user:42"), ""},
		{"text keeps 0x", "0xab", false, []byte("0xab"), ""},
		{"text keeps spaces", " a b ", false, []byte(" a b "), ""},
		{"text not UTF-8", "\xff\x00", false, []byte{0xff, 0}, ""},
		{"empty text", "", false, nil, "empty key"},
		{"hex", "00ff", true, []byte{0, 0xff}, ""},
		{"hex with 0x", "0x00ff", true, []byte{0, 0xff}, ""},
		{"hex with 0X", "0XAB", true, []byte{0xab}, ""},
		{"hex upper case", "DEADBEEF", true, []byte{0xde, 0xad, 0xbe, 0xef}, ""},
		{"empty hex", "", true, nil, "empty key"},
		{"hex prefix only", "0x", true, nil, "empty key"},
		{"odd hex", "abc", true, nil, "is not hex"},
		{"bad hex digit", "0xzz", true, nil, "is not hex"},
		{"0x0x", "0x0x12", true, nil, "is not hex"},
		{"hex with space", "ab cd", true, nil, "is not hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseKey(tc.in, tc.hex)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseBytes_EmptyIsAValue(t *testing.T) {
	for _, hex := range []bool{false, true} {
		b, err := parseBytes("", hex)
		require.NoError(t, err)
		assert.Empty(t, b)
	}
	b, err := parseBound("", true)
	require.NoError(t, err)
	assert.Nil(t, b, "an empty bound is the open bound")
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		hex  bool
		want string
	}{
		{"text", []byte("user:42"), false, "user:42"},
		{"text with spaces", []byte("a b"), false, "a b"},
		{"unicode", []byte("clé ünïcødé 日本"), false, "clé ünïcødé 日本"},
		{"empty", []byte{}, false, ""},
		{"nil", nil, false, ""},
		{"binary", []byte{0, 0xff}, false, "0x00ff"},
		{"invalid UTF-8", []byte("ab\xc3"), false, "0x6162c3"},
		{"tab", []byte("a\tb"), false, "0x610962"},
		{"newline", []byte("a\n"), false, "0x610a"},
		{"DEL", []byte("a\x7f"), false, "0x617f"},
		{"no-break space", []byte("a\u00a0b"), false, "0x61c2a062"},
		{"zero-width joiner", []byte("a\u200db"), false, "0x61e2808d62"},
		{"replacement char", []byte("\ufffd"), false, "0xefbfbd"},
		{"looks like hex", []byte("0xab"), false, "0x30786162"},
		{"looks like hex, upper", []byte("0Xab"), false, "0x30586162"},
		{"just 0", []byte("0"), false, "0"},
		{"forced hex", []byte("abc"), true, "0x616263"},
		{"forced hex empty", nil, true, "0x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, formatBytes(tc.in, tc.hex))
		})
	}
}

// What formatBytes prints, parseKey reads back: as it is when it is
// text, with --hex when it is hex.
func TestFormatBytes_RoundTrips(t *testing.T) {
	for _, b := range [][]byte{
		[]byte("user:42"), {0}, {0, 0xff, 0x10}, []byte("0x12"), []byte("a\tb"), []byte("日本"), []byte("\xff"),
	} {
		for _, hex := range []bool{false, true} {
			s := formatBytes(b, hex)
			asHex := len(s) >= 2 && s[:2] == "0x"
			got, err := parseKey(s, asHex)
			require.NoError(t, err, "%q", s)
			assert.Equal(t, b, got, "%q", s)
		}
	}
}
