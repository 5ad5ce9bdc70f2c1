package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// MaxAnswerBytes bounds an answer a Client reads: a /stats of a store with
// the most groups (resource.MaxGroups) is far smaller.
const MaxAnswerBytes = 16 << 20

// Client talks to a Handler over HTTP, in the wire format this package
// defines: kvctl's live commands are built on it.
type Client struct {
	base *url.URL
	hc   *http.Client
}

// NewClient returns a client of the Handler mounted at base (e.g.
// "http://127.0.0.1:7070" or "http://host/admin"), sending its requests
// with hc. Close it when done if hc's transport is its own.
func NewClient(base *url.URL, hc *http.Client) *Client {
	u := *base
	u.Path = strings.TrimRight(u.Path, "/")
	return &Client{base: &u, hc: hc}
}

// URL is the endpoint's base URL.
func (c *Client) URL() string { return c.base.String() }

// Close drops the idle connections of the client's transport, and with
// them their goroutines.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Stats is GET /stats: the store's kv.Stats.
func (c *Client) Stats(ctx context.Context) (kv.Stats, error) {
	var s kv.Stats
	return s, c.Do(ctx, http.MethodGet, "/stats", nil, &s)
}

// Groups is GET /groups.
func (c *Client) Groups(ctx context.Context) (GroupsList, error) {
	var g GroupsList
	return g, c.Do(ctx, http.MethodGet, "/groups", nil, &g)
}

// PutGroup is PUT /groups/NAME: it creates or updates cfg's group and
// returns the group as the store now has it.
func (c *Client) PutGroup(ctx context.Context, cfg resource.GroupConfig) (resource.GroupConfig, error) {
	var got resource.GroupConfig
	return got, c.Do(ctx, http.MethodPut, "/groups/"+cfg.Name, cfg, &got)
}

// DeleteGroup is DELETE /groups/NAME.
func (c *Client) DeleteGroup(ctx context.Context, name string) (Deleted, error) {
	var d Deleted
	return d, c.Do(ctx, http.MethodDelete, "/groups/"+name, nil, &d)
}

// UnreachableError is a request that got no answer: nothing listens at the
// address, or the connection failed.
type UnreachableError struct {
	URL string // the endpoint's base URL
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the admin endpoint at %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// StatusError is an answer other than 2xx, with the endpoint's message
// (ErrorMessage).
type StatusError struct {
	Method, Path string
	Code         int
	Msg          string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %s (HTTP %d %s)", e.Method, e.Path, e.Msg, e.Code, http.StatusText(e.Code))
}

// Do sends method path with body (JSON-encoded unless nil) and decodes a
// 2xx answer into out (unless nil). Another answer is a *StatusError, no
// answer an *UnreachableError; ctx's end is returned as its cause.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	u := *c.base
	u.Path += path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in our message already
		}
		return &UnreachableError{URL: c.base.String(), Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes))
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &StatusError{Method: method, Path: path, Code: resp.StatusCode, Msg: ErrorMessage(b)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the answer from %s is not what a coopkv admin client expects (is it a coopkv admin endpoint?): %w", method, path, c.base, err)
	}
	return nil
}
