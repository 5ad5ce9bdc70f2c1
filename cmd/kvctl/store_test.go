package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

// digest maps each file under dir but LOCK (which Pebble re-creates to
// lock the store) to the hash of its contents, its mode and its
// modification time.
func digest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LOCK" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%x %v %d", sha256.Sum256(b), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	}))
	return out
}

func TestReadCommands_LeaveTheStoreAlone(t *testing.T) {
	dir := flushedStore(t, 2000)
	before := digest(t, dir)
	require.NotEmpty(t, before)
	req := writeFile(t, "req.json", `{"ranges": [{}], "aggs": [{"func": "count"}]}`)
	for _, args := range [][]string{
		{"get", "k00042"},
		{"get", "wal-only"},
		{"scan", "--limit", "10"},
		{"scan", "--reverse"},
		{"stats"},
		{"check"},
		{"check", "--rows", "", ""},
		{"cop", "--request", req},
	} {
		kvctl(t, append(args, "--dir", dir)...).ok(t)
		assert.Equal(t, before, digest(t, dir), "kvctl %v changed the store's files", args)
	}
}

func TestOfflineCommands_LockedStore(t *testing.T) {
	dir := flushedStore(t, 10)
	db, err := kv.Open(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })

	req := writeFile(t, "req.json", `{"ranges": [{}]}`)
	for _, args := range [][]string{
		{"get", "k00001"}, {"set", "k", "v"}, {"delete", "k"}, {"scan"}, {"stats"}, {"check"}, {"cop", "--request", req},
	} {
		done := make(chan result, 1)
		go func() { done <- kvctl(t, append(args, "--dir", dir)...) }()
		var r result
		select {
		case r = <-done:
		case <-time.After(30 * time.Second): // a hang, not a slow answer
			t.Fatalf("kvctl %v waited for the lock", args)
		}
		assert.Equal(t, 1, r.code, "%v", args)
		assert.Equal(t, "kvctl: store "+dir+" is open in another process (Pebble allows one opener at a time: stop it, or use the live commands against its admin endpoint)\n", r.stderr, "%v", args)
	}
}
