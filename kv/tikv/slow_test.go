package tikv

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	"github.com/tikv/client-go/v2/util/async"
	"github.com/tikv/client-go/v2/util/codec"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// slowRegion is a client-go Client that holds every request to one region
// for delay before passing it on, or until the request's context ends: a
// TiKV busy in that region, behind gRPC, which ends a call with its
// context. (The mock's own ScheduleDelay delays only prewrites and
// pessimistic locks of a start timestamp known beforehand, and sleeps in
// its handler deaf to the context.)
type slowRegion struct {
	tikv.Client
	delay  time.Duration
	region atomic.Uint64 // 0: none
	held   atomic.Int64  // requests held, in all
}

// hold waits while req is for the slow region; it returns ctx's error if
// ctx ended first.
func (c *slowRegion) hold(ctx context.Context, req *tikvrpc.Request) error {
	if id := c.region.Load(); id == 0 || req.Context.RegionId != id {
		return nil
	}
	c.held.Add(1)
	t := time.NewTimer(c.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *slowRegion) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	if err := c.hold(ctx, req); err != nil {
		return nil, err
	}
	return c.Client.SendRequest(ctx, addr, req, timeout)
}

func (c *slowRegion) SendRequestAsync(ctx context.Context, addr string, req *tikvrpc.Request, cb async.Callback[*tikvrpc.Response]) {
	if id := c.region.Load(); id == 0 || req.Context.RegionId != id {
		c.Client.SendRequestAsync(ctx, addr, req, cb)
		return
	}
	go func() {
		if err := c.hold(ctx, req); err != nil {
			cb.Schedule(nil, err)
			return
		}
		c.Client.SendRequestAsync(ctx, addr, req, cb)
	}()
}

// One region holds every request for a minute (k000…k049's): every call into it
// returns by its deadline with the context's error; calls elsewhere, made
// while requests into it are held, are not held behind them; a write
// across it that its deadline cut short is there whole or not at all once
// the region answers again; and then every call works.
func TestFaults_SlowRegion(t *testing.T) {
	slow := &slowRegion{delay: time.Minute}
	s, cluster := hookedCluster(t, nil, func(c tikv.Client) tikv.Client { slow.Client = c; return slow })
	keys := faultKeys(t, s, 200)

	meta, _, _, _ := cluster.GetRegionByKey(codec.EncodeBytes(nil, s.ks.key([]byte("k001"))))
	slow.region.Store(meta.GetId())

	// Into the slow region: the calls of a cluster that is down, but the
	// DeleteRange, whose range is elsewhere.
	for _, c := range downCalls {
		if c.name == "Write DeleteRange" {
			continue
		}
		callByDeadline(t, s, c.name, c.call)
	}
	require.Positive(t, slow.held.Load(), "the calls met the slow region")

	// Elsewhere, beside a Get held in the slow region: each call works,
	// well before the slow region would have answered.
	heldCtx, cancelHeld := context.WithCancel(context.Background())
	heldDone := make(chan error, 1)
	go func() { _, err := s.Get(heldCtx, []byte("k002")); heldDone <- err }()
	elsewhere := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Get", func(ctx context.Context) error { _, err := s.Get(ctx, []byte("k100")); return err }},
		{"MultiGet", func(ctx context.Context) error {
			_, err := s.MultiGet(ctx, [][]byte{[]byte("k100"), []byte("k199")})
			return err
		}},
		{"Scan", func(ctx context.Context) error {
			n, err := drain(s.Scan(ctx, []byte("k05"), []byte("k20"), &kv.ScanOptions{Reverse: true}))
			if err == nil {
				assert.Equal(t, 150, n, "k050…k199")
			}
			return err
		}},
		{"Coprocessor", func(ctx context.Context) error {
			resp, err := s.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{Start: []byte("k05"), End: []byte("k20")}}})
			if err == nil {
				assert.Len(t, resp.Rows, 150, "k050…k199")
			}
			return err
		}},
		{"Write", func(ctx context.Context) error {
			b := s.NewBatch()
			b.Set([]byte("zz0"), []byte("w"))
			b.DeleteRange([]byte("m"), []byte("n"))
			return s.Write(ctx, b)
		}},
	}
	for _, c := range elsewhere {
		ctx, cancel := context.WithTimeout(context.Background(), slow.delay/2)
		assert.NoError(t, c.call(ctx), "%s elsewhere", c.name)
		cancel()
	}
	select {
	case err := <-heldDone:
		t.Fatalf("the Get in the slow region returned while held: %v", err)
	default:
	}
	cancelHeld()
	assert.ErrorIs(t, <-heldDone, context.Canceled)

	// A write across the slow region and two others: its locks elsewhere
	// name a primary in the slow region, so it comes last.
	cut := []string{"k001", "k100", "k150"}
	var before []string
	for _, k := range cut[1:] {
		v, err := s.Get(context.Background(), []byte(k))
		require.NoError(t, err)
		before = append(before, string(v))
	}
	callByDeadline(t, s, "Write across", func(ctx context.Context, s *Store) error {
		b := s.NewBatch()
		for _, k := range cut {
			b.Set([]byte(k), []byte("cut"))
		}
		return s.Write(ctx, b)
	})

	// The region answers again.
	slow.region.Store(0)
	callsWork(t, s, "once the region answered again")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	for _, k := range cut[1:] { // k001 was written since, by callsWork
		v, err := s.Get(ctx, []byte(k))
		require.NoError(t, err)
		got = append(got, string(v))
	}
	assert.Contains(t, [][]string{{"cut", "cut"}, before}, got, "the write cut short is whole or absent: %q", got)
	n, err := drain(s.Scan(ctx, nil, nil, nil))
	require.NoError(t, err)
	assert.Equal(t, len(keys)+1, n, "every key there, once, and zz0")
}
