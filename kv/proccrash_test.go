//go:build linux

package kv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The process-crash tests kill a real writer: each runs its own test binary
// again as a child (TestProcessCrashChild) that writes batches to an on-disk
// store and says "ack i" after each, SIGKILLs the child after a random
// number of acks, and checks the store the child left. The kills run one
// after another on the same directory; each child carries on from the batch
// after the store's "last".
//
// The kill points are seeded (the seed is logged; COOPKV_PROCCRASH_SEED=N
// replays them, though not the child's timing). The default run kills 50
// children per test (the goal this project set itself; under -race on a
// 2-core machine, 18 s synced and 4 s with NoSync, 2026-12-03); a long run
// sets the number:
//
//	COOPKV_PROCCRASH_KILLS=200 go test -race -run 'TestProcessCrash' ./kv/
//
// The file builds on Linux only: the child dies with the test through
// Pdeathsig, which only Linux has.

const (
	procCrashChildEnv  = "COOPKV_CRASH_CHILD"
	procCrashNoSyncEnv = "COOPKV_CRASH_CHILD_NOSYNC"
	procCrashBatchKeys = 5
	// procCrashChildLimit ends a child that was somehow not killed (its
	// parent gone and Pdeathsig not delivered), so that none writes forever.
	procCrashChildLimit = 2 * time.Minute
)

func procCrashKey(batch, j int) []byte { return fmt.Appendf(nil, "b%d-%d", batch, j) }

// TestProcessCrashChild is the child of TestProcessCrash and
// TestProcessCrash_NoSync and skips unless run as one. It writes batch i —
// keys b<i>-0 … b<i>-4 and "last", all set to i — synced unless told NoSync,
// and prints "ack i" once Apply has returned, until it is killed.
func TestProcessCrashChild(t *testing.T) {
	dir := os.Getenv(procCrashChildEnv)
	if dir == "" {
		t.Skip("the child of TestProcessCrash; runs only when it sets " + procCrashChildEnv)
	}
	db, err := Open(dir, &Options{NoSync: os.Getenv(procCrashNoSyncEnv) == "true"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: open: %v\n", err)
		os.Exit(2)
	}
	next := 0
	v, err := db.Get(context.Background(), []byte("last"))
	switch {
	case err == nil:
		last, err := strconv.Atoi(string(v))
		if err != nil {
			fmt.Fprintf(os.Stderr, "child: last = %q: %v\n", v, err)
			os.Exit(2)
		}
		next = last + 1
	case !errors.Is(err, ErrNotFound):
		fmt.Fprintf(os.Stderr, "child: get last: %v\n", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	deadline := time.Now().Add(procCrashChildLimit)
	for i := next; time.Now().Before(deadline); i++ {
		b := db.NewBatch()
		val := strconv.AppendInt(nil, int64(i), 10)
		for j := range procCrashBatchKeys {
			b.Set(procCrashKey(i, j), val)
		}
		b.Set([]byte("last"), val)
		if err := db.Apply(b); err != nil {
			fmt.Fprintf(os.Stderr, "child: apply batch %d: %v\n", i, err)
			os.Exit(2)
		}
		// The ack leaves the process before the next batch starts: a
		// write error (the parent is gone) ends the child.
		fmt.Fprintf(out, "ack %d\n", i)
		if err := out.Flush(); err != nil {
			os.Exit(3)
		}
	}
	fmt.Fprintln(os.Stderr, "child: never killed; giving up")
	os.Exit(4)
}

// TestProcessCrash: a writer killed at any moment loses no acknowledged
// batch and tears none. The batches in the store are 0 … m, each whole,
// with m the last acknowledged batch or the one after it (applied, not yet
// acknowledged), and "last" = m.
func TestProcessCrash(t *testing.T) { runProcCrash(t, false) }

// TestProcessCrash_NoSync: a NoSync writer killed at any moment may lose
// acknowledged batches — Pebble keeps up to a 32 KiB WAL block in the
// process until it fills or a sync asks for it — but only the last ones,
// and tears none. The batches in the store are 0 … m, each whole, with m
// at least what the store held when the child started (the check before
// closed it cleanly) and at most the batch after the last ack.
func TestProcessCrash_NoSync(t *testing.T) { runProcCrash(t, true) }

func runProcCrash(t *testing.T, noSync bool) {
	if os.Getenv(procCrashChildEnv) != "" {
		t.Skip("in a child")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("COOPKV_PROCCRASH_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "COOPKV_PROCCRASH_SEED")
	}
	t.Logf("seed %d (replay the kill points with COOPKV_PROCCRASH_SEED=%d)", seed, seed)
	kills := 50
	if s := os.Getenv("COOPKV_PROCCRASH_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "COOPKV_PROCCRASH_KILLS")
		require.Positive(t, n, "COOPKV_PROCCRASH_KILLS")
		kills = n
	}
	r := rand.New(rand.NewPCG(seed, 3))
	dir := t.TempDir()

	acked := 0    // acknowledged batches, over all children
	stored := -1  // the newest batch in the store
	inFlight := 0 // kills that left a batch applied but not acknowledged
	var lost, maxLost int
	for k := range kills {
		killAfter := 5 + r.IntN(196) // acks, 5–200
		// Then a little more, so that the kill lands anywhere in the
		// child's loop: in an Apply, between Apply and ack, after an ack.
		jitter := time.Duration(r.IntN(2000)) * time.Microsecond
		acks, stderr := runProcCrashChild(t, dir, noSync, killAfter, jitter)
		what := fmt.Sprintf("seed %d, kill %d (after %d acks, +%v)", seed, k, killAfter, jitter)
		if !assert.GreaterOrEqual(t, len(acks), killAfter, "%s: the child died before it was killed; its stderr:\n%s", what, stderr) {
			return
		}
		for i, a := range acks {
			if !assert.Equal(t, stored+1+i, a, "%s: the child did not carry on from the batch after the store's last", what) {
				return
			}
		}
		acked += len(acks)
		lastAck := acks[len(acks)-1]
		// The fewest batches the store may hold: every acknowledged one, or
		// with NoSync those it held before the child started.
		least, why := lastAck, "acknowledged batches lost"
		if noSync {
			least, why = stored, "batches lost that were in the store before the child started"
		}
		m, ok := checkProcCrashStore(t, dir, least, lastAck+1, what, why)
		if !ok {
			return
		}
		if m > lastAck {
			inFlight++
		}
		if m < lastAck {
			lost++
			maxLost = max(maxLost, lastAck-m)
		}
		stored = m
	}
	t.Logf("%d kills, %d batches acknowledged; kills that left a batch applied but not acknowledged: %d; that lost acknowledged batches: %d (at most %d)", kills, acked, inFlight, lost, maxLost)
}

// runProcCrashChild starts a child writing to dir, kills it with SIGKILL a
// jitter after its killAfter-th ack, and returns every ack it printed (those
// that were in the pipe at the kill included) and its stderr.
func runProcCrashChild(t *testing.T, dir string, noSync bool, killAfter int, jitter time.Duration) (acks []int, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), procCrashChildEnv+"="+dir, procCrashNoSyncEnv+"="+strconv.FormatBool(noSync))
	// If the test dies, so does the child.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	lines := bufio.NewScanner(stdout)
	killed := false
	for lines.Scan() {
		line := lines.Text()
		s, ok := strings.CutPrefix(line, "ack ")
		if !ok {
			continue // the test framework's own lines
		}
		i, err := strconv.Atoi(s)
		require.NoError(t, err, "child's line %q", line)
		acks = append(acks, i)
		if !killed && len(acks) == killAfter {
			if jitter > 0 {
				time.Sleep(jitter) // not a wait for a condition: it moves the kill to a random point of the child's loop
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			killed = true
		}
		// Past the kill, read on: acks already in the pipe count.
	}
	require.NoError(t, lines.Err())
	err = cmd.Wait()
	waited = true
	if killed {
		var exitErr *exec.ExitError
		if assert.ErrorAs(t, err, &exitErr, "the child's exit") {
			ws, _ := exitErr.Sys().(syscall.WaitStatus)
			assert.Equal(t, syscall.SIGKILL, ws.Signal(), "the child should have died of the kill; its stderr:\n%s", errBuf.String())
		}
	}
	return acks, errBuf.String()
}

// checkProcCrashStore opens the store a killed child left, checks that it
// holds the batches 0 … m, each whole, with least ≤ m ≤ most (why says what
// m < least means), and returns m. ok is false if a check failed.
func checkProcCrashStore(t *testing.T, dir string, least, most int, what, why string) (m int, ok bool) {
	t.Helper()
	db, err := Open(dir, &Options{RowCacheSize: -1})
	require.NoError(t, err, "%s: reopen", what)
	defer func() {
		if !assert.NoError(t, db.Close(), "%s: close", what) {
			ok = false
		}
	}()
	ctx := context.Background()

	// Every batch's keys, from a scan of them all.
	found := map[int]map[int]string{} // batch → key index → value
	it := db.Scan(ctx, []byte("b"), []byte("c"), nil)
	for it.Next() {
		var batch, j int
		if _, err := fmt.Sscanf(string(it.Key()), "b%d-%d", &batch, &j); !assert.NoError(t, err, "%s: stray key %q", what, it.Key()) {
			break
		}
		if found[batch] == nil {
			found[batch] = map[int]string{}
		}
		found[batch][j] = string(it.Value())
	}
	scanErr, closeErr := it.Err(), it.Close()
	if !assert.NoError(t, scanErr, "%s: scan", what) || !assert.NoError(t, closeErr, "%s: iterator close", what) {
		return m, false
	}

	// Whole batches, none torn.
	m = -1
	for batch, keys := range found {
		want := map[int]string{}
		for j := range procCrashBatchKeys {
			want[j] = strconv.Itoa(batch)
		}
		if !assert.Equal(t, want, keys, "%s: batch %d is torn", what, batch) {
			return m, false
		}
		m = max(m, batch)
	}
	if !assert.Len(t, found, m+1, "%s: the batches are not a prefix 0…%d: a batch is missing", what, m) {
		return m, false
	}
	if !assert.GreaterOrEqual(t, m, least, "%s: %s", what, why) ||
		!assert.LessOrEqual(t, m, most, "%s: more than one batch beyond the last ack", what) {
		return m, false
	}
	last, err := db.Get(ctx, []byte("last"))
	if m < 0 {
		return m, assert.ErrorIs(t, err, ErrNotFound, "%s: \"last\" without a batch", what)
	}
	if !assert.NoError(t, err, "%s: get last", what) {
		return m, false
	}
	return m, assert.Equal(t, strconv.Itoa(m), string(last), "%s: \"last\" is not the newest batch", what)
}
