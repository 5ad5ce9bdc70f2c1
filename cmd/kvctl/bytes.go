package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// errEmptyKey is parseKey's error for an empty key, which the store
// refuses (kv.ErrEmptyKey); kvctl says so before opening it.
var errEmptyKey = errors.New("empty key: a key has at least one byte")

// parseKey reads a KEY argument: the argument's bytes as they are, or with
// asHex its hex digits (an optional "0x" in front, as formatBytes writes
// it). An empty key is an error. It never panics, whatever s holds.
func parseKey(s string, asHex bool) ([]byte, error) {
	b, err := parseBytes(s, asHex)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, errEmptyKey
	}
	return b, nil
}

// parseBytes is parseKey for values and bounds, where empty is allowed.
func parseBytes(s string, asHex bool) ([]byte, error) {
	if !asHex {
		return []byte(s), nil
	}
	digits := s
	if len(digits) >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') {
		digits = digits[2:]
	}
	b, err := hex.DecodeString(digits)
	if err != nil {
		return nil, fmt.Errorf("%q is not hex (--hex): %w", s, err)
	}
	return b, nil
}

// parseBound reads a scan bound: empty is the open bound (nil).
func parseBound(s string, asHex bool) ([]byte, error) {
	b, err := parseBytes(s, asHex)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return b, nil
}

// formatBytes renders a key or a value for output: as text when b is valid
// UTF-8 of printable characters (unicode.IsPrint: no control characters,
// no tabs or newlines, no invisible ones) and does not itself start with
// "0x"; otherwise, or with asHex, as "0x" and lower-case hex. So output
// that starts with "0x" is always hex, and a key printed as text can be
// typed back as it is. It never panics.
func formatBytes(b []byte, asHex bool) string {
	if !asHex && printable(b) && !(len(b) >= 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')) {
		return string(b)
	}
	return "0x" + hex.EncodeToString(b)
}

// printable reports whether b is valid UTF-8 of printable characters.
func printable(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
		b = b[n:]
	}
	return true
}
