package tikv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tikverr "github.com/tikv/client-go/v2/error"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	pd "github.com/tikv/pd/client"
	"github.com/tikv/pd/client/clients/tso"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// faultCluster is a Store on a fresh mock cluster split at splitKeys, with
// the cluster, for tests that stop its stores, move its leaders and split
// its regions; the Store is closed by the test's cleanup.
func faultCluster(t *testing.T, opts *Options) (*Store, *testutils.MockCluster) {
	t.Helper()
	return hookedCluster(t, opts, nil)
}

// hookedCluster is faultCluster with the store's requests going through
// the client hijack returns (nil: none) in front of the mock's.
func hookedCluster(t testing.TB, opts *Options, hijack func(tikv.Client) tikv.Client) (*Store, *testutils.MockCluster) {
	t.Helper()
	client, cluster, pdClient, err := testutils.NewMockTiKV("", nil)
	require.NoError(t, err)
	testutils.BootstrapWithMultiRegions(cluster, splitKeys...)
	kvs, err := tikv.NewTestTiKVStore(client, pdClient, hijack, nil, 0)
	require.NoError(t, err)
	s, err := New(kvs, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, cluster
}

// failures is a client in front of the mock's that reports each request
// that failed: with the cluster's stores down, a call's first request
// fails and client-go then backs off without sending another (the store
// is unreachable), so a failure says the call is in client-go's retries.
type failures struct {
	tikv.Client
	failed chan struct{}
}

func (f *failures) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	resp, err := f.Client.SendRequest(ctx, addr, req, timeout)
	if err != nil {
		select {
		case f.failed <- struct{}{}:
		default: // nobody counts this many
		}
	}
	return resp, err
}

// watchedCluster is faultCluster with its requests' failures reported.
func watchedCluster(t *testing.T) (*Store, *testutils.MockCluster, *failures) {
	t.Helper()
	f := &failures{failed: make(chan struct{}, 1024)}
	s, cluster := hookedCluster(t, nil, func(c tikv.Client) tikv.Client { f.Client = c; return f })
	return s, cluster, f
}

// drainFailures forgets the failures so far.
func drainFailures(f *failures) {
	for {
		select {
		case <-f.failed:
		default:
			return
		}
	}
}

// inRetries waits until n requests have failed since the last wait: the
// calls that sent them are in client-go's retries.
func (f *failures) inRetries(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-f.failed:
		case <-time.After(time.Minute):
			require.FailNow(t, "hung", "%d of %d requests failed", i, n)
		}
	}
}

// stopAll stops every store of c; startAll starts them again.
func stopAll(c *testutils.MockCluster) {
	for _, st := range c.GetAllStores() {
		c.StopStore(st.Id)
	}
	answerProbes(c)
}

func startAll(c *testutils.MockCluster) {
	for _, st := range c.GetAllStores() {
		c.StartStore(st.Id)
	}
	answerProbes(c)
}

// answerProbes answers client-go's liveness probes of c's stores as they
// are (MockLiveness).
func answerProbes(c *testutils.MockCluster) {
	if err := MockLiveness(c.GetAllStores()); err != nil {
		panic(err)
	}
}

// faultKeys writes n keys k000…, each a coprocessor row, and returns them.
func faultKeys(t *testing.T, s *Store, n int) [][]byte {
	t.Helper()
	b := s.NewBatch()
	keys := make([][]byte, n)
	for i := range n {
		keys[i] = fmt.Appendf(nil, "k%03d", i)
		row, err := coproc.EncodeRow(map[string]any{"i": i}) // a row, for the coprocessor
		require.NoError(t, err)
		b.Set(keys[i], row)
	}
	require.NoError(t, s.Write(context.Background(), b))
	return keys
}

// drain reads it to its end and returns its rows and error, closing it.
func drain(it *kv.Iterator) (int, error) {
	n := 0
	for it.Next() {
		n++
	}
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// Calls on a cluster whose stores are all down. Each returns an error, at
// the latest shortly after its context's deadline.
var downCalls = []struct {
	name string
	call func(ctx context.Context, s *Store) error
}{
	{"Get", func(ctx context.Context, s *Store) error { _, err := s.Get(ctx, []byte("k001")); return err }},
	{"MultiGet", func(ctx context.Context, s *Store) error {
		_, err := s.MultiGet(ctx, [][]byte{[]byte("k001"), []byte("k050")})
		return err
	}},
	{"Scan", func(ctx context.Context, s *Store) error { _, err := drain(s.Scan(ctx, nil, nil, nil)); return err }},
	{"Scan reverse", func(ctx context.Context, s *Store) error {
		_, err := drain(s.Scan(ctx, nil, nil, &kv.ScanOptions{Reverse: true}))
		return err
	}},
	{"Coprocessor", func(ctx context.Context, s *Store) error {
		_, err := s.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{Start: []byte("a"), End: []byte("z")}}})
		return err
	}},
	{"Write", func(ctx context.Context, s *Store) error {
		b := s.NewBatch()
		b.Set([]byte("k001"), []byte("w"))
		return s.Write(ctx, b)
	}},
	{"Write DeleteRange", func(ctx context.Context, s *Store) error {
		b := s.NewBatch()
		b.DeleteRange([]byte("m"), []byte("n")) // no key there: its scan still asks the cluster
		return s.Write(ctx, b)
	}},
	{"Snapshot", func(ctx context.Context, s *Store) error {
		sn, err := s.NewSnapshot(ctx)
		if err != nil {
			return err
		}
		defer sn.Close()
		if _, err := drain(sn.Scan(ctx, nil, nil, nil)); err == nil {
			return errors.New("the snapshot's scan read a down cluster")
		}
		_, err = sn.Get(ctx, []byte("k001"))
		return err
	}},
	{"Txn", func(ctx context.Context, s *Store) error {
		return kv.Update(ctx, s, func(tx *kv.Txn) error {
			if _, err := tx.Get(ctx, []byte("k001")); err != nil {
				return err
			}
			return tx.Set([]byte("k001"), []byte("t"))
		})
	}},
}

// downDeadline is the deadline of the calls on a cluster that does not
// answer, and downSlack how late after it they may return: a backoff in
// flight, on a loaded machine.
const downDeadline, downSlack = 300 * time.Millisecond, 2 * time.Second

// callByDeadline makes call with a downDeadline on a cluster that does
// not answer, checks it returns within downSlack of it with the context's
// error, and returns that error.
func callByDeadline(t *testing.T, s *Store, name string, call func(context.Context, *Store) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), downDeadline)
	defer cancel()
	start := time.Now()
	err := call(ctx, s)
	took := time.Since(start)
	t.Logf("%s returned in %v (deadline %v)", name, took.Round(time.Millisecond), downDeadline)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "%s", name)
	assert.Less(t, took, downDeadline+downSlack, "%s returned %v after its deadline", name, took-downDeadline)
	return err
}

// callsWork checks that every call works (when) the cluster is back.
func callsWork(t *testing.T, s *Store, when string) {
	t.Helper()
	for _, c := range downCalls {
		if c.name == "Snapshot" {
			continue // it asserts that its scan fails
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		assert.NoError(t, c.call(ctx, s), "%s %s", c.name, when)
		cancel()
	}
}

// With every store down, each call returns by its deadline (plus a bound
// for a backoff in flight and a loaded machine), with its context's error,
// which is an *UnavailableError naming the region and store; and every
// call works again once the stores are back. Before,
// a Scan and a Coprocessor request sat in client-go's scanner backoff, on
// a context of its own, for 20 s past their deadline.
func TestFaults_AllStoresDown_EveryCallReturnsByItsDeadline(t *testing.T) {
	for _, par := range []int{1, 4} { // the coprocessor's rows, one scan or region readers
		t.Run(fmt.Sprintf("coprocessor-concurrency-%d", par), func(t *testing.T) {
			s, cluster := faultCluster(t, &Options{CoprocessorConcurrency: par})
			keys := faultKeys(t, s, 100)
			stopAll(cluster)
			for _, c := range downCalls {
				err := callByDeadline(t, s, c.name, c.call)
				if c.name == "Snapshot" || (c.name == "Coprocessor" && par > 1) {
					// The snapshot's scan took the deadline (its Get only
					// sees the context done); the region readers' errors
					// are not waited for once the context is done.
					continue
				}
				assert.ErrorIs(t, err, ErrUnavailable, "%s", c.name)
				var ue *UnavailableError
				if assert.ErrorAs(t, err, &ue, "%s", c.name) {
					assert.NotZero(t, ue.Region, "%s: names the region", c.name)
					assert.NotZero(t, ue.Store, "%s: names the leader's store", c.name)
				}
				assert.NotContains(t, err.Error(), "\n", "%s: one line", c.name)
			}
			startAll(cluster)
			callsWork(t, s, "after the stores came back")
			n, err := drain(s.Scan(context.Background(), nil, nil, nil))
			require.NoError(t, err)
			assert.Equal(t, len(keys), n, "every key there, once")
		})
	}
}

// A Close of an iterator whose Next is blocked in client-go's retries
// (another goroutine's; no deadline) ends that Next at its next backoff:
// neither waits out client-go's 20 s.
func TestFaults_IteratorCloseEndsABlockedNext(t *testing.T) {
	s, cluster, f := watchedCluster(t)
	faultKeys(t, s, 10)
	stopAll(cluster)
	drainFailures(f)
	it := s.Scan(context.Background(), nil, nil, nil)
	done := make(chan error, 1)
	go func() {
		for it.Next() {
		}
		done <- it.Err()
	}()
	f.inRetries(t, 1)
	start := time.Now()
	require.NoError(t, it.Close())
	select {
	case err := <-done:
		assert.Error(t, err, "the scan did not read a down cluster")
	case <-time.After(5 * time.Second):
		t.Fatal("Next still blocked 5 s after Close")
	}
	assert.Less(t, time.Since(start), 5*time.Second)
	startAll(cluster)
}

// client-go's words for a cluster that did not serve map to ErrUnavailable,
// keeping client-go's error, or the context's when it ended the call.
func TestFaults_UnavailableErrors(t *testing.T) {
	gaveUp := fmt.Errorf("wrapped: %w", tikverr.ErrRegionUnavailable)
	err := storeErr(gaveUp)
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.ErrorIs(t, err, tikverr.ErrRegionUnavailable, "client-go's error stays reachable")
	assert.Equal(t, "tikv: cluster unavailable: wrapped: region unavailable", err.Error())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, cause := range []error{
		errors.New("epoch_not_match:<> "),
		errors.New(`message:"peer is not leader" not_leader:<region_id:4 > `),
		tikverr.ErrQueryInterruptedWithSignal{Signal: 1},
	} {
		err := ctxDoneErr(ctx, cause)
		assert.ErrorIs(t, err, ErrUnavailable, "%v", cause)
		assert.ErrorIs(t, err, context.Canceled, "%v: the context's error", cause)
	}
	err = ctxDoneErr(ctx, errors.New("some other failure"))
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrUnavailable, "not every failure is the cluster's")
	assert.NotErrorIs(t, storeErr(errors.New("epoch_not_matchless")), ErrUnavailable)

	pd := storeErr(tikverr.NewErrPDServerTimeout(""))
	assert.ErrorIs(t, pd, ErrUnavailable)
	assert.Equal(t, "tikv: cluster unavailable: PD did not answer in time", pd.Error())

	// A call that the store's Close interrupted while the caller's context
	// was live failed because the store closed, whatever client-go said.
	closing, closeAll := context.WithCancel(context.Background())
	s := &Store{closingCtx: closing}
	live := context.Background()
	interrupted := tikverr.ErrQueryInterruptedWithSignal{Signal: 1}
	assert.NotErrorIs(t, storeErr(s.callErr(live, interrupted)), kv.ErrClosed, "the store is open")
	closeAll()
	for _, cause := range []error{interrupted, fmt.Errorf("send: %w", context.Canceled)} {
		err := storeErr(s.callErr(live, cause))
		assert.ErrorIs(t, err, kv.ErrClosed, "%v", cause)
		assert.NotErrorIs(t, err, ErrUnavailable, "%v", cause)
	}
	assert.ErrorIs(t, s.callErr(ctx, interrupted), context.Canceled, "the caller's end comes first")
	assert.NotErrorIs(t, s.callErr(live, errors.New("some other failure")), kv.ErrClosed)

	ue := &UnavailableError{Region: 4, Store: 1, Err: context.DeadlineExceeded, detail: errors.New("line one\nline two")}
	assert.Equal(t, "tikv: cluster unavailable at region 4 (leader on store 1): context deadline exceeded (line one)", ue.Error())
}

// The cluster's stores stop and start again while writers and a scan run:
// every acknowledged batch is there whole, every failed one is there whole
// or not at all, and a scan whose deadline outlasts the outage reads every
// row once it is over.
func TestFaults_StoresRestartDuringWritesAndReads(t *testing.T) {
	s, cluster := faultCluster(t, nil)
	keys := faultKeys(t, s, 100)
	type batch struct {
		keys [][]byte
		err  error
	}
	var (
		mu      sync.Mutex
		batches []batch
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	for w := range 2 {
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				b := s.NewBatch()
				var bk [][]byte
				for k := range 4 {
					bk = append(bk, fmt.Appendf(nil, "w%d-%04d-%d", w, j, k))
					b.Set(bk[k], []byte("x"))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				err := s.Write(ctx, b)
				cancel()
				mu.Lock()
				batches = append(batches, batch{bk, err})
				mu.Unlock()
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	stopAll(cluster)
	scanned := make(chan error, 1)
	go func() {
		// Started during the outage, with a deadline past its end.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		it := s.Scan(ctx, []byte("k"), []byte("l"), nil)
		i := 0
		for it.Next() {
			if string(it.Key()) != string(keys[i]) {
				scanned <- fmt.Errorf("row %d: %q, want %q", i, it.Key(), keys[i])
				return
			}
			i++
		}
		if err := it.Close(); err != nil {
			scanned <- err
			return
		}
		if i != len(keys) {
			scanned <- fmt.Errorf("read %d rows, want %d", i, len(keys))
			return
		}
		scanned <- nil
	}()
	time.Sleep(500 * time.Millisecond)
	startAll(cluster)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	require.NoError(t, <-scanned, "the scan started in the outage")

	var acked, failed, partial int
	for _, b := range batches {
		vals, err := s.MultiGet(context.Background(), b.keys)
		require.NoError(t, err)
		n := 0
		for _, v := range vals {
			if v != nil {
				n++
			}
		}
		switch {
		case b.err == nil:
			acked++
			assert.Equal(t, len(b.keys), n, "acknowledged batch %s: whole", b.keys[0])
		default:
			failed++
			if n != 0 && n != len(b.keys) {
				partial++
			}
		}
	}
	t.Logf("%d batches acknowledged, %d failed in the outage", acked, failed)
	assert.Zero(t, partial, "a failed batch is there whole or not at all")
	assert.Positive(t, acked)
	assert.Positive(t, failed, "the outage failed some writes")
}

// Close with every store down and calls inside that have no deadline: the
// calls give up client-go's retries, and Close returns without waiting
// them out (20 s to 40 s).
func TestFaults_CloseDoesNotWaitOutTheRetries(t *testing.T) {
	s, cluster, f := watchedCluster(t) // its cleanup's Close returns this Close's error
	faultKeys(t, s, 10)
	stopAll(cluster)
	drainFailures(f)
	defer startAll(cluster)
	errs := make(chan error, len(downCalls))
	var started sync.WaitGroup
	for _, c := range downCalls {
		started.Add(1)
		go func() {
			started.Done()
			errs <- c.call(context.Background(), s)
		}()
	}
	started.Wait()
	// The first request to fail says client-go is retrying; the other
	// calls find the stores marked unreachable and back off without a
	// request, or are on their way in: Close ends them either way.
	f.inRetries(t, 1)
	start := time.Now()
	require.NoError(t, s.Close())
	assert.Less(t, time.Since(start), 5*time.Second, "Close waited out client-go's retries")
	for range downCalls {
		select {
		case err := <-errs:
			assert.Error(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("a call still running 5 s after Close")
		}
	}
}

// pdDown is a PD client whose timestamp service stops answering while
// down is set: a request waits until its context ends, as for a PD that is
// unreachable, and fails then — or until PD is back (client-go's own
// timestamp updater asks on a context that never ends).
type pdDown struct {
	pd.Client
	down atomic.Bool
}

// wait waits while p is down, and returns ctx's error if it ended first.
func (p *pdDown) wait(ctx context.Context) error {
	for p.down.Load() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("pd unreachable: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func (p *pdDown) GetTS(ctx context.Context) (int64, int64, error) {
	if err := p.wait(ctx); err != nil {
		return 0, 0, err
	}
	return p.Client.GetTS(ctx)
}

func (p *pdDown) GetTSAsync(ctx context.Context) tso.TSFuture {
	if p.down.Load() {
		return tsFuture{p, ctx}
	}
	return p.Client.GetTSAsync(ctx)
}

type tsFuture struct {
	p   *pdDown
	ctx context.Context
}

func (f tsFuture) Wait() (int64, int64, error) { return f.p.GetTS(f.ctx) }

// PD unreachable after Open: every call that needs a timestamp returns by
// its deadline with its context's error, and works again once PD is back.
func TestFaults_PDUnreachableAfterOpen(t *testing.T) {
	client, cluster, pdClient, err := testutils.NewMockTiKV("", nil)
	require.NoError(t, err)
	testutils.BootstrapWithMultiRegions(cluster, splitKeys...)
	var p *pdDown
	kvs, err := tikv.NewTestTiKVStore(client, pdClient, nil, func(c pd.Client) pd.Client { p = &pdDown{Client: c}; return p }, 0)
	require.NoError(t, err)
	s, err := New(kvs, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	faultKeys(t, s, 20)
	p.down.Store(true)
	for _, c := range downCalls {
		callByDeadline(t, s, c.name, c.call)
	}
	p.down.Store(false)
	callsWork(t, s, "once PD is back")
}
