package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/spf13/pflag"
)

// clientsFlag is --clients, the client goroutines of a workload, which
// most have: its help says what they do there.
type clientsFlag struct{ n int }

func (c *clientsFlag) add(fs *pflag.FlagSet, usage string) {
	fs.IntVar(&c.n, "clients", 4, usage)
}

// validate checks that there are at least least clients; why says why,
// for a workload that needs more than one.
func (c *clientsFlag) validate(least int, why string) error {
	switch {
	case c.n < 1:
		return fmt.Errorf("--clients must be at least 1, not %d", c.n)
	case c.n < least:
		return fmt.Errorf("%s: --clients must be at least %d, not %d", why, least, c.n)
	}
	return nil
}

// closedClients returns n clients of e running back to back the
// operation newOp makes for each, given the client's random stream (client
// i's is e.rand(i)).
func closedClients(e *env, n int, newOp func(r *rand.Rand) func(ctx context.Context) (class, error)) []client {
	cs := make([]client, n)
	for i := range cs {
		cs[i] = closedLoop(newOp(e.rand(i)))
	}
	return cs
}

// getWorkload is uniform random point Gets from --clients goroutines, back
// to back: the pool's cost per read.
func getWorkload() Workload {
	w := &getLoad{}
	w.plain = plain{
		name:    "get",
		short:   "point Gets of random keys, back to back",
		long:    "get: --clients goroutines doing point Gets of uniform random keys, back to back: the pool's cost per read.",
		classes: []class{classGet},
		clients: func(e *env) []client {
			return closedClients(e, w.clients.n, func(r *rand.Rand) func(ctx context.Context) (class, error) {
				buf := make([]byte, 0, keyLen)
				return func(ctx context.Context) (class, error) {
					return classGet, get(ctx, e.db, buf, r.Int64N(e.keys.count()))
				}
			})
		},
	}
	return w
}

type getLoad struct {
	plain
	clients clientsFlag
}

func (w *getLoad) Flags(fs *pflag.FlagSet) { w.clients.add(fs, "client goroutines doing Gets") }
func (w *getLoad) Validate() error         { return w.clients.validate(1, "") }

// multiGetWorkload is, from --clients goroutines back to back, MultiGets
// of --multiget-keys uniform random keys (class "multiget", the even
// clients) and the same keys read by as many Gets one after another
// (class "gets", the odd clients): clients 2i and 2i+1 draw the same key
// sets, and each class's ops/s counts sets of keys read, so the two
// compare directly.
func multiGetWorkload() Workload {
	w := &multiGetLoad{}
	w.plain = plain{
		name:  "multiget",
		short: "a MultiGet of many keys against as many Gets of the same keys",
		long: `multiget compares a MultiGet of --multiget-keys random keys (class
"multiget", the even clients) with the same keys read by as many Gets one
after another (class "gets", the odd clients: clients 2i and 2i+1 draw the
same keys); each class's ops/s counts sets of keys read. It needs
--clients 2 or more.`,
		classes: []class{classMultiGet, classGets},
		clients: func(e *env) []client {
			cs := make([]client, w.clients.n)
			for i := range cs {
				r := e.rand(i / 2)
				keys := make([][]byte, w.keys)
				draw := func() {
					for j := range keys {
						keys[j] = appendKey(keys[j][:0], r.Int64N(e.keys.count()))
					}
				}
				if i%2 == 0 {
					cs[i] = closedLoop(func(ctx context.Context) (class, error) {
						draw()
						_, err := e.db.MultiGet(ctx, keys)
						return classMultiGet, err
					})
					continue
				}
				cs[i] = closedLoop(func(ctx context.Context) (class, error) {
					draw()
					for _, k := range keys {
						if _, err := e.db.Get(ctx, k); err != nil {
							return classGets, err
						}
					}
					return classGets, nil
				})
			}
			return cs
		},
	}
	return w
}

type multiGetLoad struct {
	plain
	clients clientsFlag
	keys    int // keys per MultiGet
}

func (w *multiGetLoad) Flags(fs *pflag.FlagSet) {
	w.clients.add(fs, "client goroutines, in pairs: MultiGets and Gets of the same keys")
	fs.IntVar(&w.keys, "multiget-keys", 100, "keys per MultiGet (and per loop of Gets)")
}

func (w *multiGetLoad) Validate() error {
	errs := []error{w.clients.validate(2, "multiget pairs its clients (a MultiGet and Gets of the same keys)")}
	if w.keys < 1 {
		errs = append(errs, fmt.Errorf("--multiget-keys must be at least 1, not %d", w.keys))
	}
	return errors.Join(errs...)
}

// scanWorkload is range scans of --scan-len keys from uniform random
// starts, from --clients goroutines, back to back.
func scanWorkload() Workload {
	w := &scanLoad{}
	w.plain = plain{
		name:    "scan",
		short:   "range scans from random keys, back to back",
		long:    "scan: --clients goroutines doing range scans of --scan-len keys from uniform random starts, back to back.",
		classes: []class{classScan},
		clients: func(e *env) []client { return scanClients(e, w.clients.n, w.scanLen.n) },
	}
	return w
}

type scanLoad struct {
	plain
	clients clientsFlag
	scanLen scanLenFlag
}

func (w *scanLoad) Flags(fs *pflag.FlagSet) {
	w.clients.add(fs, "client goroutines doing scans")
	w.scanLen.add(fs, "keys per range scan")
}

func (w *scanLoad) Validate() error {
	return errors.Join(w.clients.validate(1, ""), w.scanLen.validate())
}

// scanLenFlag is --scan-len, the keys per scan of scan and groups.
type scanLenFlag struct{ n int }

func (s *scanLenFlag) add(fs *pflag.FlagSet, usage string) { fs.IntVar(&s.n, "scan-len", 1_000, usage) }

func (s *scanLenFlag) validate() error {
	if s.n < 1 {
		return fmt.Errorf("--scan-len must be at least 1, not %d", s.n)
	}
	return nil
}

// scanRandom scans n keys (at most every key) from a start drawn by
// int64n, so that the scan reads n keys whatever the start, and counts
// the rows it read into *rows.
func scanRandom(ctx context.Context, e *env, int64n func(int64) int64, n int, rows *int64) error {
	count := e.keys.count()
	n = int(min(int64(n), count))
	start := int64n(count - int64(n) + 1)
	return scan(ctx, e.db, start, n, int64(n), rows)
}

// scanClients returns n clients of e looping on scans of scanLen keys
// from random starts (client i's drawn from e.rand(i)), the rows they
// read counted (countRows).
func scanClients(e *env, n, scanLen int) []client {
	cs := make([]client, n)
	for i := range cs {
		r := e.rand(i)
		cs[i] = countRows(func(ctx context.Context, rows *int64) (class, error) {
			return classScan, scanRandom(ctx, e, r.Int64N, scanLen, rows)
		})
	}
	return cs
}
