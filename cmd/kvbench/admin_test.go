package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/cmd/internal/bench"
	"github.com/coopkv/coopkv/kv"
)

func TestAdminAddr(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{":7070", "127.0.0.1:7070"},
		{":0", "127.0.0.1:0"},
		{"localhost:7070", "localhost:7070"},
		{"0.0.0.0:7070", "0.0.0.0:7070"},
		{"127.0.0.1:7070", "127.0.0.1:7070"},
		{"[::1]:7070", "[::1]:7070"},
		{"[::]:7070", "[::]:7070"},
	} {
		got, err := adminAddr(tc.addr)
		if assert.NoError(t, err, tc.addr) {
			assert.Equal(t, tc.want, got, tc.addr)
		}
	}
	for _, addr := range []string{"7070", "localhost", ":http", ":-1", ":65536", "::1:7070", ""} {
		_, err := adminAddr(addr)
		assert.Error(t, err, addr)
	}
}

// adminClient is an HTTP client that keeps no connection open, so that
// no goroutine of it outlives a test.
func adminClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// getJSON GETs url and decodes its JSON body into a map.
func getJSON(t *testing.T, c *http.Client, url string) (int, map[string]any) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

// TestAdminServer follows the server through a run's life: no store
// (503), a store (kv/admin's answers), none again, then closed.
func TestAdminServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := serveAdmin(ln, io.Discard)
	c := adminClient(t)
	url := "http://" + s.addr()

	code, body := getJSON(t, c, url+"/stats")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, map[string]any{"error": "kvbench is between phases; no store open"}, body)

	db, err := kv.Open(t.TempDir(), &kv.Options{InMemory: true, Scheduler: kv.SchedulerFIFO})
	require.NoError(t, err)
	s.show(db)
	code, body = getJSON(t, c, url+"/stats")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "fifo", body["scheduler"], body)
	code, _ = getJSON(t, c, url+"/groups")
	assert.Equal(t, http.StatusOK, code)

	s.show(nil)
	require.NoError(t, db.Close())
	code, _ = getJSON(t, c, url+"/stats")
	assert.Equal(t, http.StatusServiceUnavailable, code)

	require.NoError(t, s.close())
	_, err = c.Get(url + "/stats")
	assert.Error(t, err, "the server is closed")
}

// adminLine is the line a run prints when it serves --admin.
var adminLine = regexp.MustCompile(`admin endpoint on http://(\S+) \(kvctl --addr (\S+)\)\n`)

// TestRun_Admin runs kvbench with --admin on a free port, reads the port
// back from the line it prints, asks for /stats during the measured
// phase, then stops the run and checks that the server went with it.
func TestRun_Admin(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errOut := newWatchedBuffer("direct get: 1m0s\n")
	done := make(chan error, 1)
	go func() {
		done <- executeTo(ctx, io.Discard, errOut, tiny("get", "--schedulers", "direct", "--duration", "1m", "--warmup", "0",
			"--admin", "127.0.0.1:0")...)
	}()
	select {
	case <-errOut.seen:
	case err := <-done:
		require.FailNow(t, "the run ended before its measured phase", "%v\n%s", err, errOut)
	}
	m := adminLine.FindStringSubmatch(errOut.String())
	require.NotNil(t, m, errOut.String())
	addr := m[1]
	assert.Equal(t, addr, m[2])
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.NotEqual(t, "0", port, "the line shows the port bound")

	c := adminClient(t)
	code, body := getJSON(t, c, "http://"+addr+"/stats")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "direct", body["scheduler"], body)

	cancel()
	err = <-done
	assert.ErrorIs(t, err, bench.ErrInterrupted)
	_, err = c.Get("http://" + addr + "/stats")
	assert.Error(t, err, "the server is closed with the run")
}

// TestRun_AdminAddressBusy checks that a busy --admin address fails the
// run at once, before the load, naming the address.
func TestRun_AdminAddressBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	out, errOut, err := execute(t, "--admin", ln.Addr().String())
	require.Error(t, err)
	assert.Equal(t, 1, exitStatus(err))
	assert.Contains(t, err.Error(), "--admin "+ln.Addr().String()+": ")
	assert.Empty(t, out)
	assert.Empty(t, errOut)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing loaded")
}
