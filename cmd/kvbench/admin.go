package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/admin"
)

// adminShutdownGrace is how long the end of a run waits for the admin
// requests in flight before it cuts their connections.
const adminShutdownGrace = time.Second

// betweenStores is the body of the admin endpoint's answers while no
// store is open: kvbench closes each store before it opens the next.
const betweenStores = "kvbench is between phases; no store open"

// adminAddr is the address --admin ADDR listens on: ADDR, with 127.0.0.1
// for a missing host, so that ":7070" is loopback only, not every
// interface (the admin handler has no authentication, and PUT changes how
// the store schedules). A host given ("localhost", "0.0.0.0") is kept.
func adminAddr(addr string) (string, error) {
	hp, err := cli.HostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--admin %q: %w", addr, err)
	}
	return hp, nil
}

// adminServer serves, over HTTP, kv/admin's handler of whichever store of
// the run is open. kvbench opens a store for the load and reopens it for
// each scheduler; between two stores the server answers 503.
type adminServer struct {
	ln     net.Listener
	srv    *http.Server
	served chan error // Serve's error, once it has returned

	// store is the handler of the open store, nil between stores. show
	// stores it after kv.Open has returned, so a request that loads it
	// sees an open store; show(nil) comes before Close, so no request
	// loads a handler once its store is closed. One that loaded it
	// earlier may still run while the store closes: it then reads a
	// closed store, which kv allows (calls fail with kv.ErrClosed, Stats
	// says closed) and kv/admin answers.
	store atomic.Pointer[storeHandler]
}

// storeHandler is kv/admin's handler of one store.
type storeHandler struct{ http.Handler }

// listenAdmin listens on addr (as adminAddr made it) and serves there
// until close; http.Server's own errors go to errLog.
func listenAdmin(addr string, errLog io.Writer) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--admin %s: %w", addr, err)
	}
	return serveAdmin(ln, errLog), nil
}

// serveAdmin serves on ln, which it then owns, until close.
func serveAdmin(ln net.Listener, errLog io.Writer) *adminServer {
	s := &adminServer{ln: ln, served: make(chan error, 1)}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(errLog, "kvbench: admin: ", 0),
	}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s
}

// addr is the address the server listens on, with the port it was given
// when asked for port 0.
func (s *adminServer) addr() string { return s.ln.Addr().String() }

// show makes the server answer for db, or for no store when db is nil.
// Call it with nil before closing db.
func (s *adminServer) show(db *kv.DB) {
	if db == nil {
		s.store.Store(nil)
		return
	}
	s.store.Store(&storeHandler{admin.Handler(db)})
}

func (s *adminServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.store.Load(); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Retry-After", "1")
	admin.WriteError(w, http.StatusServiceUnavailable, betweenStores)
}

// close stops the server: it lets the requests in flight finish, for up
// to adminShutdownGrace, then cuts their connections, and returns once
// Serve has. It reports a failure of Serve during the run, if any.
func (s *adminServer) close() error {
	s.store.Store(nil)
	ctx, cancel := context.WithTimeout(context.Background(), adminShutdownGrace)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close() // the requests that did not end in time
	}
	if err := <-s.served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("--admin %s: %w", s.addr(), err)
	}
	return nil
}
