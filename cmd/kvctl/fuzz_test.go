package main

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParseKey checks parseKey and formatBytes (bytes.go) against their
// contract, whatever the input:
//
//   - neither panics;
//   - as text, a non-empty s is its own bytes, "0x" or not; an empty one
//     is errEmptyKey;
//   - as hex, s parses exactly when, less one leading "0x" or "0X", it is
//     an even number of hex digits, to those digits' bytes;
//   - formatBytes writes text only for printable UTF-8 that does not start
//     with "0x"/"0X" (and never with asHex), else "0x" and lower-case hex;
//     either way parseKey, told which by the "0x", reads back b.
//
// The seed corpus is in testdata/fuzz/FuzzParseKey/. Fuzz with
//
//	go test -run '^$' -fuzz FuzzParseKey ./cmd/kvctl/
func FuzzParseKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, b []byte, asHex bool) {
		// parseKey as text.
		got, err := parseKey(s, false)
		if s == "" {
			assert.ErrorIs(t, err, errEmptyKey)
			assert.Nil(t, got)
		} else if assert.NoError(t, err, "%q", s) {
			assert.Equal(t, []byte(s), got)
		}

		// parseKey as hex.
		got, err = parseKey(s, true)
		digits := s
		if len(digits) >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') {
			digits = digits[2:]
		}
		want, herr := hex.DecodeString(digits)
		switch {
		case herr != nil:
			assert.Error(t, err, "%q is not hex", s)
			assert.Nil(t, got)
		case len(want) == 0:
			assert.ErrorIs(t, err, errEmptyKey, "%q", s)
			assert.Nil(t, got)
		default:
			if assert.NoError(t, err, "%q", s) {
				assert.Equal(t, want, got)
				assert.Equal(t, "0x"+strings.ToLower(digits), formatBytes(got, true), "hex round trip of %q", s)
			}
		}

		// formatBytes, and back.
		out := formatBytes(b, asHex)
		isHex := strings.HasPrefix(out, "0x")
		if asHex {
			assert.True(t, isHex, "%q with asHex: %q", b, out)
		}
		if isHex {
			assert.Equal(t, "0x"+hex.EncodeToString(b), out)
		} else {
			assert.Equal(t, string(b), out, "text is b itself")
			assert.True(t, utf8.Valid(b) && printable(b), "%q is printed as text but is not printable", b)
			assert.False(t, strings.HasPrefix(strings.ToLower(out), "0x"), "text output %q looks like hex", out)
		}
		if !asHex && printable(b) && !strings.HasPrefix(strings.ToLower(string(b)), "0x") {
			assert.False(t, isHex, "printable %q is printed as hex", b)
		}
		back, err := parseBytes(out, isHex)
		require.NoError(t, err, "formatBytes(%q, %v) = %q does not parse", b, asHex, out)
		assert.True(t, bytes.Equal(b, back), "formatBytes(%q, %v) = %q parses to %q", b, asHex, out, back)
		if len(b) > 0 {
			key, err := parseKey(out, isHex)
			require.NoError(t, err, "%q", out)
			assert.True(t, bytes.Equal(b, key), "formatBytes(%q, %v) = %q parses to key %q", b, asHex, out, key)
		}
	})
}
