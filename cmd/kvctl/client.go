package main

import (
	"context"
	"errors"
	"fmt"
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
	return &adminClient{Client: admin.NewClient(base, &http.Client{Transport: tr, Timeout: f.timeout}), hostPort: hostPort}, nil
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

// adminClient is kv/admin's Client, with the address kvctl was given for
// the hint an unreachable endpoint gets.
type adminClient struct {
	*admin.Client
	hostPort string
}

// close drops the client's idle connections, and with them their
// goroutines.
func (c *adminClient) close() { c.Close() }

// do is admin.Client.Do, telling the operator how to start an endpoint
// when none answers.
func (c *adminClient) do(ctx context.Context, method, path string, body, out any) error {
	return c.explain(c.Do(ctx, method, path, body, out))
}

// explain adds to an unreachable endpoint's error how to start one there.
func (c *adminClient) explain(err error) error {
	var ue *admin.UnreachableError
	if errors.As(err, &ue) {
		return fmt.Errorf(`%w; start one with "kvbench --admin %s" or mount admin.Handler(db) in your program`, err, c.hostPort)
	}
	return err
}
