package main

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
	"time"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv/admin"
)

// defaultAddr is where kvctl looks for the admin endpoint: the loopback
// address kvbench's examples serve it on.
const defaultAddr = "127.0.0.1:7070"

// maxAnswerBytes bounds an answer kvctl reads: a /stats of a store with
// the most groups (resource.MaxGroups) is far smaller.
const maxAnswerBytes = 16 << 20

// liveFlags are the flags of the commands that talk to an admin endpoint.
type liveFlags struct {
	addr    string
	timeout time.Duration
}

// add puts the flags on cmd as persistent flags, so that "groups set"
// and "groups delete" take them too.
func (f *liveFlags) add(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.addr, "addr", defaultAddr, `the admin endpoint: HOST:PORT, or a URL such as "http://host:7070/admin" where it is mounted under a path`)
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", 10*time.Second, "give up on a request to the endpoint after this long")
}

// client connects to the endpoint the flags name. Close it when done: it
// owns its idle connections (no process-wide transport outlives it).
func (f *liveFlags) client() (*adminClient, error) {
	base, hostPort, err := parseAddr(f.addr)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &adminClient{base: base, hostPort: hostPort, hc: &http.Client{Transport: tr, Timeout: f.timeout}}, nil
}

// call is a live command's whole conversation with the endpoint: one
// request, its answer decoded into out, and Ctrl-C reported as such.
func (f *liveFlags) call(ctx context.Context, method, path string, body, out any) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	defer c.close()
	return cli.Interrupted(ctx, c.do(ctx, method, path, body, out))
}

// parseAddr reads --addr: "HOST:PORT" (an empty host is 127.0.0.1, as
// kvbench --admin listens on it) or an http or https URL, whose path is
// where the handler is mounted. It returns the base URL and the host:port
// for messages.
func parseAddr(s string) (base *url.URL, hostPort string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, "", errors.New("--addr is empty; want HOST:PORT or an http:// URL")
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return nil, "", fmt.Errorf("--addr %q: %w", s, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, "", fmt.Errorf("--addr %q: the scheme must be http or https", s)
		}
		if u.Host == "" {
			return nil, "", fmt.Errorf("--addr %q: no host", s)
		}
		u.Path = strings.TrimRight(u.Path, "/")
		u.RawPath, u.RawQuery, u.Fragment = "", "", ""
		return u, u.Host, nil
	}
	if strings.HasSuffix(s, ":") {
		return nil, "", fmt.Errorf("--addr %q: no port", s)
	}
	hostPort, err = cli.HostPort(s)
	if err != nil {
		return nil, "", fmt.Errorf("--addr %q: %w (or an http:// URL)", s, err)
	}
	return &url.URL{Scheme: "http", Host: hostPort}, hostPort, nil
}

// adminClient makes kv/admin's requests (see admin.Handler).
type adminClient struct {
	base     *url.URL
	hostPort string
	hc       *http.Client
}

// close drops the client's idle connections, and with them their
// goroutines.
func (c *adminClient) close() { c.hc.CloseIdleConnections() }

// unreachableError is a request that got no answer: nothing listens at
// the address, or the connection failed.
type unreachableError struct {
	url, hostPort string
	err           error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf(`cannot reach the admin endpoint at %s: %v; start one with "kvbench --admin %s" or mount admin.Handler(db) in your program`, e.url, e.err, e.hostPort)
}

func (e *unreachableError) Unwrap() error { return e.err }

// statusError is a non-2xx answer, with the endpoint's own message.
type statusError struct {
	method, path string
	code         int
	msg          string // the body's "error", or the start of a body that had none
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %s (HTTP %d %s)", e.method, e.path, e.msg, e.code, http.StatusText(e.code))
}

// do sends method path with body (JSON-encoded unless nil) and decodes a
// 2xx answer into out (unless nil). Other answers become a statusError,
// no answer an unreachableError; ctx's end is returned as it is.
func (c *adminClient) do(ctx context.Context, method, path string, body, out any) error {
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
		return &unreachableError{url: c.base.String(), hostPort: c.hostPort, err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &statusError{method: method, path: path, code: resp.StatusCode, msg: admin.ErrorMessage(b)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the answer from %s is not what kvctl expects (is it a coopkv admin endpoint?): %w", method, path, c.base, err)
	}
	return nil
}
