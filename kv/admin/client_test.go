package admin

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

func newTestClient(t *testing.T, base string) *Client {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	c := NewClient(u, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}})
	t.Cleanup(c.Close)
	return c
}

func TestClient_RoundTrips(t *testing.T) {
	db := openDB(t, kv.Options{ResourceControl: true})
	srv := httptest.NewServer(Handler(db))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/")
	ctx := t.Context()

	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, kv.SchedulerPriority, st.Scheduler)

	got, err := c.PutGroup(ctx, resource.GroupConfig{Name: "batch", RUPerSec: 100, Priority: resource.PriorityLow})
	require.NoError(t, err)
	assert.Equal(t, "batch", got.Name)
	assert.Equal(t, resource.PriorityLow, got.Priority)

	gs, err := c.Groups(ctx)
	require.NoError(t, err)
	assert.True(t, gs.ResourceControl)
	var names []string
	for _, g := range gs.Groups {
		names = append(names, g.Name)
	}
	assert.Contains(t, names, "batch")

	d, err := c.DeleteGroup(ctx, "batch")
	require.NoError(t, err)
	assert.Equal(t, "batch", d.Deleted)

	_, err = c.DeleteGroup(ctx, resource.DefaultGroup)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusConflict, se.Code)
	assert.Contains(t, err.Error(), "DELETE /groups/default: ")
	assert.Equal(t, srv.URL, c.URL(), "the base URL without its trailing slash")
}

func TestClient_Unreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = newTestClient(t, "http://"+addr).Stats(t.Context())
	var ue *UnreachableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "http://"+addr, ue.URL)
	assert.Contains(t, err.Error(), "cannot reach the admin endpoint at http://"+addr+": ")
}
