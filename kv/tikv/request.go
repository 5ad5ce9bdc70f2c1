package tikv

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	"github.com/tikv/client-go/v2/tikvrpc/interceptor"
	"github.com/tikv/client-go/v2/txnkv/transaction"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"
	"github.com/tikv/client-go/v2/txnkv/txnutil"
	"github.com/tikv/client-go/v2/util/async"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// RequestSource is the request source every request of a Store names
// (kvrpcpb.Context.RequestSource, "external_coopkv"), so that TiKV's
// metrics tell coopkv's traffic apart.
const RequestSource = "coopkv"

// request is what a context says about the requests made with it, as TiKV
// takes it: the resource group, the priority (TiKV's resource-control
// priorities are coopkv's: LOW 1, MEDIUM 8, HIGH 16) and the task id.
type request struct {
	group    string
	priority resource.Priority
	taskID   uint64
	// explicit says the context named the priority: it then overrides the
	// group's (OverridePriority), as kv.WithPriority does embedded.
	explicit bool
}

// requestOf reads ctx's request settings; an invalid priority is an error,
// as it is for the embedded store.
func requestOf(ctx context.Context) (request, error) {
	r := request{group: kv.ResourceGroupFrom(ctx), priority: resource.PriorityMedium}
	if r.group == "" {
		r.group = resource.DefaultGroup
	}
	if p, ok := kv.PriorityFrom(ctx); ok {
		if !p.Valid() {
			return r, fmt.Errorf("tikv: %w %d (want resource.PriorityLow, PriorityMedium or PriorityHigh: %d, %d or %d)",
				errInvalidPriority, int(p), resource.PriorityLow, resource.PriorityMedium, resource.PriorityHigh)
		}
		r.priority, r.explicit = p, true
	}
	r.taskID, _ = kv.TaskIDFrom(ctx)
	return r, nil
}

// commandPri is the request's priority as TiKV's command priority, which
// orders work inside a store's scheduler and read pool.
func (r request) commandPri() txnutil.Priority {
	switch r.priority {
	case resource.PriorityHigh:
		return txnutil.PriorityHigh
	case resource.PriorityLow:
		return txnutil.PriorityLow
	}
	return txnutil.PriorityNormal
}

// interceptor stamps every RPC with the group and, when the context named
// one, the override priority: client-go has no setter for the latter, and
// the stamp also covers the requests it sends on its own behalf (lock
// resolution, the commit of a transaction's secondaries).
func (r request) interceptor() interceptor.RPCInterceptor { return &callInterceptor{r: r} }

// callInterceptor is the interceptor of a call's snapshot or transaction:
// it stamps the requests sent under it with the call's settings, and, for
// a scan's snapshot, carries the scan's end (killer.end), at which the
// stamper cancels a request in flight.
type callInterceptor struct {
	r   request
	end context.Context // nil: the requests' own contexts bound them
}

// Name implements interceptor.RPCInterceptor.
func (*callInterceptor) Name() string { return "coopkv-request" }

// Wrap implements interceptor.RPCInterceptor.
func (i *callInterceptor) Wrap(next interceptor.RPCInterceptorFunc) interceptor.RPCInterceptorFunc {
	return func(target string, req *tikvrpc.Request) (*tikvrpc.Response, error) {
		i.r.stamp(req)
		return next(target, req)
	}
}

// stamp sets r on req.
func (r request) stamp(req *tikvrpc.Request) {
	rc := req.ResourceControlContext
	if rc == nil {
		rc = &kvrpcpb.ResourceControlContext{}
		req.ResourceControlContext = rc
	}
	rc.ResourceGroupName = r.group
	if r.explicit {
		rc.OverridePriority = uint64(r.priority)
	}
	req.Priority = r.commandPri().ToPB()
}

// stamper wraps the client-go store's client to stamp what the
// interceptor cannot reach: a transaction commits its secondary keys in
// the background, under the client-go store's own context, after Commit
// has returned. Write registers its transaction's start timestamp here
// until those commits are done (it waits for them), and the stamper sets
// the Write's request settings on them.
type stamper struct {
	tikv.Client
	mu   sync.Mutex
	txns map[uint64]request
}

// track stamps the commits of the transaction started at ts with r until
// the returned function is called.
func (c *stamper) track(ts uint64, r request) (untrack func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.txns == nil {
		c.txns = map[uint64]request{}
	}
	c.txns[ts] = r
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.txns, ts)
	}
}

func (c *stamper) stampTxn(req *tikvrpc.Request) {
	if req.Type != tikvrpc.CmdCommit {
		return
	}
	c.mu.Lock()
	r, ok := c.txns[req.Commit().GetStartVersion()]
	c.mu.Unlock()
	if ok {
		r.stamp(req)
	}
}

// SendRequest implements tikv.Client.
func (c *stamper) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	c.stampTxn(req)
	if ctx, release := endWithCall(ctx); release != nil {
		defer release()
		return c.Client.SendRequest(ctx, addr, req, timeout)
	}
	return c.Client.SendRequest(ctx, addr, req, timeout)
}

// SendRequestAsync implements tikv.Client.
func (c *stamper) SendRequestAsync(ctx context.Context, addr string, req *tikvrpc.Request, cb async.Callback[*tikvrpc.Response]) {
	c.stampTxn(req)
	ctx, release := endWithCall(ctx)
	if release != nil {
		cb.Inject(func(resp *tikvrpc.Response, err error) (*tikvrpc.Response, error) {
			release()
			return resp, err
		})
	}
	c.Client.SendRequestAsync(ctx, addr, req, cb)
}

// endWithCall is ctx, ended also at the end of the call it was sent for, when
// that call's interceptor carries one: client-go's scanner sends its
// requests on a context of its own (context.Background), so that a
// request held by a slow or unreachable store kept a scan past its
// deadline until the request's own timeout (60 s on TiKV; the whole delay
// on the mock). Ended so, the request fails with context.Canceled, which
// client-go returns at once, as a caller's choice, without marking the
// store unreachable (RegionRequestSender.onSendFail). Call release, if
// not nil, when the request is over; it is nil, and ctx unchanged, for the
// requests whose contexts bound them already.
func endWithCall(ctx context.Context) (_ context.Context, release func()) {
	ci, ok := interceptor.GetRPCInterceptorFromCtx(ctx).(*callInterceptor)
	if !ok || ci.end == nil {
		return ctx, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(ci.end, cancel)
	return ctx, func() { stop(); cancel() }
}

// snapshot sets r on a client-go snapshot.
func (r request) snapshot(s *txnsnapshot.KVSnapshot) {
	s.SetResourceGroupName(r.group)
	s.SetPriority(r.commandPri())
	s.SetTaskID(r.taskID)
	s.SetRequestSourceType(RequestSource)
	s.SetRPCInterceptor(r.interceptor())
}

// txn sets r on a client-go transaction.
func (r request) txn(t *transaction.KVTxn) {
	t.SetResourceGroupName(r.group)
	t.SetPriority(r.commandPri())
	t.SetRequestSourceType(RequestSource)
	t.SetRPCInterceptor(r.interceptor())
}
