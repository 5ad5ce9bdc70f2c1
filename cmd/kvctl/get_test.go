package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGetSetDelete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")

	r := kvctl(t, "set", "user:42", "ada", "--dir", dir)
	assert.Empty(t, r.ok(t))
	assert.Contains(t, r.stderr, "created a new store in "+dir)

	got := decode[pair](t, kvctl(t, "get", "user:42", "--dir", dir, "--json").ok(t))
	assert.Equal(t, pair{Key: "user:42", Value: "ada"}, got)
	assert.Equal(t, "ada\n", kvctl(t, "get", "user:42", "--dir", dir).ok(t))

	// A second set to an existing store says nothing of creating one.
	r = kvctl(t, "set", "user:42", "grace", "--dir", dir, "--json")
	assert.Equal(t, pair{Key: "user:42", Value: "grace"}, decode[pair](t, r.ok(t)))
	assert.Empty(t, r.stderr)
	assert.Equal(t, "grace\n", kvctl(t, "get", "user:42", "--dir", dir).ok(t))

	d := decode[deleted](t, kvctl(t, "delete", "user:42", "--dir", dir, "--json").ok(t))
	assert.Equal(t, deleted{Key: "user:42", Existed: true}, d)
	r = kvctl(t, "get", "user:42", "--dir", dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `kvctl: key "user:42": kv: not found`)

	// Deleting a missing key succeeds, and says it was missing.
	r = kvctl(t, "delete", "user:42", "--dir", dir)
	assert.Empty(t, r.ok(t))
	assert.Contains(t, r.stderr, `key "user:42" was not in the store`)
}

func TestGetSetDelete_Hex(t *testing.T) {
	dir := t.TempDir()
	kvctl(t, "set", "--hex", "0x00ff", "deadbeef", "--dir", dir).ok(t)
	kvctl(t, "set", "text", "0xab", "--dir", dir).ok(t)

	got := decode[pair](t, kvctl(t, "get", "--hex", "00ff", "--dir", dir, "--json").ok(t))
	assert.Equal(t, pair{Key: "0x00ff", Value: "0xdeadbeef"}, got)
	// Binary values print as hex without --hex too; text that looks like
	// hex prints as hex, so that "0x" always means hex.
	assert.Equal(t, "0xdeadbeef\n", kvctl(t, "get", "--hex", "0x00FF", "--dir", dir).ok(t))
	assert.Equal(t, "0x30786162\n", kvctl(t, "get", "text", "--dir", dir).ok(t))
	assert.Equal(t, "0x30786162\n", kvctl(t, "get", "--hex", "74657874", "--dir", dir).ok(t))

	r := kvctl(t, "set", "--hex", "0xzz", "00", "--dir", dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `"0xzz" is not hex`)

	assert.True(t, decode[deleted](t, kvctl(t, "delete", "--hex", "00ff", "--dir", dir, "--json").ok(t)).Existed)
	assert.Equal(t, 1, kvctl(t, "get", "--hex", "00ff", "--dir", dir).code)
}

func TestGetSetDelete_EmptyKey(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"set", "", "v"}, {"get", ""}, {"delete", ""}, {"set", "--hex", "0x", "00"},
	} {
		r := kvctl(t, append(args, "--dir", dir)...)
		assert.Equal(t, 1, r.code, "%v", args)
		assert.Contains(t, r.stderr, "empty key", "%v", args)
	}
}

func TestGetDelete_NoStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nothing")
	r := kvctl(t, "get", "k", "--dir", dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "no store there")

	// A delete does not create a store to delete nothing from.
	r = kvctl(t, "delete", "k", "--dir", dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "no store in "+dir)
	assert.NoDirExists(t, dir)
	r = kvctl(t, "delete", "k", "--dir", t.TempDir())
	assert.Equal(t, 1, r.code, "an empty directory holds no store either")
	require.Contains(t, r.stderr, "no store in")
}
