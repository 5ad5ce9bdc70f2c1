package tikv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	ckv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"

	"github.com/coopkv/coopkv/kv"
)

// clientCtx is ctx as client-go sees it: ctx's values, done when ctx is
// done — by cancellation (context.Canceled), never by a deadline. Call
// stop when the call is over.
//
// client-go's region request sender takes a write request (a prewrite,
// a commit, a lock resolution) that failed with context.DeadlineExceeded
// for a store that did not answer in time: it probes the store and,
// unless the probe answers "reachable", marks the store unreachable and
// its regions for reload (replicaSelector.onSendFailure); a request that
// failed with context.Canceled it returns at once, as the caller's
// choice (RegionRequestSender.onSendFail). On a cluster the probe finds
// the store up; client-go's mock cluster answers no probe, so a caller's
// deadline passing mid-commit made its only store unreachable for good:
// every later request backed off on a pseudo epoch_not_match for 40 s,
// then failed with "region unavailable". A caller's deadline says nothing
// of the store's health, so client-go sees it as a cancellation.
//
// It is also done when the store closes (Store.closing): Close does not
// wait out client-go's retries of the calls inside.
func (s *Store) clientCtx(ctx context.Context) (c context.Context, stop func()) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unhookClose := context.AfterFunc(s.closingCtx, cancel)
	if ctx.Done() == nil {
		return c, func() { unhookClose(); cancel() }
	}
	unhook := context.AfterFunc(ctx, cancel)
	return c, func() { unhook(); unhookClose(); cancel() }
}

// ctxDoneErr is the error of a call that failed with err while its context
// ctx was done: ctx's own error (client-go saw a cancellation, see
// clientCtx), with what client-go said for detail — an *UnavailableError
// when client-go was retrying a cluster that did not answer. Else err.
func ctxDoneErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, ctx.Err()) {
		return err // nothing to add, or said already
	}
	if unavailable(err) {
		// Still retrying a cluster that did not answer: both what ended
		// the call and why it had not ended sooner.
		return &UnavailableError{Err: ctx.Err(), detail: err}
	}
	return fmt.Errorf("%w (%v)", ctx.Err(), err)
}

// callErr is ctxDoneErr for a call of s's: a call that failed
// because s's Close ended it — client-go interrupted in its backoff
// (killer) or its context cancelled (clientCtx) — while the caller's ctx
// was not done fails with kv.ErrClosed, with what client-go said for
// detail. Without it, a scan that Close interrupted reported the cluster
// unavailable.
func (s *Store) callErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && s.closingCtx.Err() != nil &&
		(unavailable(err) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("%w (%v)", kv.ErrClosed, err)
	}
	return ctxDoneErr(ctx, err)
}

// waitBackground waits for the background work of a transaction counted
// by bg — the commits of its secondary keys, the rollback of what it
// prewrote — or for ctx to be done, whichever comes first: that work runs
// under the client-go store's own context and ends by itself (or at the
// store's Close), so a caller whose context is done need not wait for it.
func waitBackground(ctx context.Context, bg *sync.WaitGroup) {
	if ctx.Done() == nil {
		bg.Wait()
		return
	}
	done := make(chan struct{})
	go func() {
		bg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// killer ends client-go's retries of a scan when the scan's context is done,
// the scan is closed, or the store closes. client-go's scanner retries a batch on a context
// of its own (context.Background, with up to 20 s of backoff), which the
// caller's cannot end, and nothing else can stop it but the snapshot's
// Variables.Killed, which its backoffer looks at after every sleep: with
// a store down, a Scan whose deadline had passed 4 s before was still
// backing off, and a Close waited for it. The scanner then fails with
// client-go's "query interrupted", which the scan reports as its
// context's error (callErr).
//
// A request in flight is ended too: a snapshot attached to k (attach)
// sends its requests under k's end, at which the stamper cancels them
// (endWithCall). Without it, a request that a slow store held kept the scan
// past its deadline for as long as the store held it.
type killer struct {
	flag                   uint32
	once                   sync.Once
	end                    context.Context // done at kill
	cancel                 context.CancelFunc
	unhookCtx, unhookClose func() bool
}

// init makes k's end; once, from whichever of arm, attach or kill comes
// first (kill may come from another goroutine: a Close).
func (k *killer) init() {
	k.once.Do(func() { k.end, k.cancel = context.WithCancel(context.Background()) })
}

// arm kills at ctx's end or the store's Close (closing) from now on,
// until disarm.
func (k *killer) arm(ctx, closing context.Context) {
	k.init()
	if k.unhookClose != nil {
		return
	}
	k.unhookClose = context.AfterFunc(closing, k.kill)
	if ctx.Done() != nil {
		k.unhookCtx = context.AfterFunc(ctx, k.kill)
	}
}

// kill makes the scanners that read k's variables give up at their next
// backoff, and ends their requests in flight.
func (k *killer) kill() {
	k.init()
	atomic.StoreUint32(&k.flag, 1) // lint:raw-atomic: client-go reads Variables.Killed, a *uint32, with atomic.LoadUint32
	k.cancel()
}

// attach makes k end snap's scans: snap's variables carry k's flag, and
// its requests, stamped with r, carry k's end.
func (k *killer) attach(snap *txnsnapshot.KVSnapshot, r request) {
	k.init()
	snap.SetVars(ckv.NewVariables(&k.flag))
	snap.SetRPCInterceptor(&callInterceptor{r: r, end: k.end})
}

// disarm lets ctx go: the scan is over.
func (k *killer) disarm() {
	for _, u := range []*func() bool{&k.unhookCtx, &k.unhookClose} {
		if *u != nil {
			(*u)()
			*u = nil
		}
	}
}
