package kv

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The oracle orders the store's writes against its transactions: every
// transition of that protocol is in this file, on type oracle, which
// reaches Pebble and the store's writers only through its oracleEnv, so
// that a test drives it on a fake (as Pebble's commitPipeline runs on a
// commitEnv). The conflict log (conflict.go) is the pure part; here are the
// locks around it and the two paths a write takes.
//
// While no transaction has been open for recordingLinger, recording is
// off and a write goes to Pebble as it always did: its only cost is
// reading the flag. A transaction that begins with recording off turns it
// on with every write held back (oracleEnv.stopWrites) — so that no write
// that read the flag as off is still in flight, unseen by the
// transaction's snapshot and unrecorded — and from then on every write is
// sequenced under oracle.mu.
//
// A write is sequenced and recorded under mu, as in flight, and applied to
// Pebble after mu is let go; once applied it is marked done. A transaction
// that begins while a write is in flight starts before it
// (conflictLog.begin): it conflicts with that write, should it read what
// the write touches, rather than miss it. So mu is held only for the log's
// bookkeeping, never across Pebble's Apply: a write stall does not hold
// up NewTxn or Rollback.
//
// A transaction's commit joins a group (commitGrouped): the first commit
// to find no group being committed leads — it checks each waiting commit
// in turn under mu, records those without a conflict, and applies them as
// one Pebble batch, in the order they were checked (Pebble's
// ApplyNoSyncWait, the fsync waited for after, so syncs group too) — and
// hands the lead to the first commit that queued meanwhile: a leader
// commits one group, so a Commit waits for at most the group before its
// own. Groups apply one at a time, in the order they were checked. A plain
// write, which read nothing, applies beside other plain writes and beside
// a group (applyRecorded): concurrent writes have no order to keep.
//
// Locks are taken in the order DB.mu, the writers' lock (DB.writeMu),
// oracle.qmu (let go before the next), oracle.mu.

// recordingLinger is how long writes go on recording after the last
// transaction ended: long enough that a loop of short transactions does
// not turn recording on (which waits for the writes in flight) for each.
const recordingLinger = time.Second

// oracleEnv is what the oracle needs of the store.
type oracleEnv struct {
	// apply writes pb to Pebble with the store's write options.
	apply func(pb *pebble.Batch) error
	// applyNoSyncWait writes pb and returns before its fsync, which the
	// caller waits for with pb.SyncWait; nil when writes are not synced.
	applyNoSyncWait func(pb *pebble.Batch) error
	// stopWrites holds back every write, waiting for those in flight,
	// until resume is called.
	stopWrites func() (resume func())
}

// oracle is the DB's; ready once its env is set (finishOpen).
type oracle struct {
	env oracleEnv
	// recording is read without mu by every write, within the writers'
	// lock; it turns on with the writes stopped and mu held, and off
	// holding mu with no transaction open.
	recording atomic.Bool
	mu        sync.Mutex
	log       conflictLog
	idleSince time.Time // when the last open transaction ended; under mu

	// lastWrite holds, for each stripe of keys, the sequence of the last
	// write sequenced while recording that wrote one of them, and
	// rangeWritten that of the last range deletion: stored under mu before
	// the write reaches Pebble, read without it by a transaction that
	// would serve a read from the row cache — a hit is the value as of
	// its start only if nothing of the key's stripe was written since
	// (unwrittenSince).
	lastWrite    [oracleStripes]atomic.Uint64
	rangeWritten atomic.Uint64

	// The commits waiting for their group (commitGrouped), and whether a
	// leader is committing one.
	qmu     sync.Mutex
	queue   []*commitReq
	leading bool
}

// oracleStripes is the number of stripes of lastWrite: 32 KiB.
const oracleStripes = 1 << 12

// sequenced notes that w was sequenced at seq; under mu.
func (o *oracle) sequenced(w *writeSet, seq uint64) {
	for _, k := range w.keys {
		o.lastWrite[keyHash(k)%oracleStripes].Store(seq)
	}
	if len(w.ranges) > 0 {
		o.rangeWritten.Store(seq)
	}
}

// unwrittenSince reports whether no write sequenced after start can have
// written key. Read after the cache lookup it guards, it sees any write
// whose value the lookup saw (the write stored its sequence first).
func (o *oracle) unwrittenSince(key []byte, start uint64) bool {
	return o.lastWrite[keyHash(key)%oracleStripes].Load() <= start && o.rangeWritten.Load() <= start
}

// txnCheck is what a transaction's commit is checked against: the
// sequence it began at and what it read.
type txnCheck struct {
	start uint64
	reads *readSet
	// ended is set once the commit has ended the transaction in the log,
	// under the same lock as its check, sparing it a lock of its own.
	ended bool
}

// stopRecording reports whether writes may stop recording: no transaction
// is open, and none has been for recordingLinger.
func stopRecording(busy bool, idleSince, now time.Time) bool {
	return !busy && now.Sub(idleSince) >= recordingLinger
}

// begin opens a transaction in the log and returns its start. The caller
// takes the transaction's snapshot after it: every write sequenced up to
// start has landed by then (one in flight moves start before it), and one
// the snapshot holds beyond start can only make the transaction conflict
// where it need not.
func (o *oracle) begin() uint64 {
	if o.recording.Load() {
		o.mu.Lock()
		if o.recording.Load() { // not turned off meanwhile
			defer o.mu.Unlock()
			return o.log.begin()
		}
		o.mu.Unlock()
	}
	resume := o.env.stopWrites() // no unrecorded write in flight
	defer resume()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recording.Store(true)
	return o.log.begin()
}

// end closes a transaction begun at start, committed or not.
func (o *oracle) end(start uint64) {
	o.mu.Lock()
	o.endLocked(start)
	o.mu.Unlock()
}

// endLocked is end under mu.
func (o *oracle) endLocked(start uint64) {
	o.log.end(start)
	if !o.log.busy() {
		o.idleSince = time.Now()
	}
}

// apply commits pb — a write of what ws returns, built only when a
// transaction needs it — after checking tx, when not nil, against the
// writes since it began (ErrConflict: nothing written). The caller is
// within the writers' lock, shared or alone.
func (o *oracle) apply(pb *pebble.Batch, ws func() writeSet, tx *txnCheck) error {
	if tx == nil {
		if !o.recording.Load() {
			return o.env.apply(pb)
		}
		return o.applyRecorded(pb, ws)
	}
	return o.commitGrouped(&commitReq{pb: pb, w: ws(), tx: tx, wake: make(chan struct{}, 1)})
}

// commitReq is a transaction's commit waiting for the group it joins.
type commitReq struct {
	pb  *pebble.Batch
	w   writeSet
	tx  *txnCheck
	seq uint64 // its sequence, once recorded
	err error
	// lead is set, under qmu, when the commit is to lead the next group.
	lead bool
	// wake is sent on once a queued commit has its outcome (err), or its
	// turn to lead (lead).
	wake chan struct{}
}

// commitGrouped commits r with the commits that queue beside it. The
// commit that finds no leader leads; the others wait until their group is
// applied, or until a leader hands them the lead for the next group.
func (o *oracle) commitGrouped(r *commitReq) error {
	o.qmu.Lock()
	o.queue = append(o.queue, r)
	if o.leading {
		o.qmu.Unlock()
		<-r.wake
		if !r.lead {
			return r.err
		}
		o.qmu.Lock()
	}
	o.leading = true
	group := o.queue // r is in it
	o.queue = nil
	o.qmu.Unlock()
	o.commitGroup(group)
	o.qmu.Lock()
	if len(o.queue) > 0 {
		next := o.queue[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		o.leading = false
	}
	o.qmu.Unlock()
	return r.err
}

// commitGroup checks, records and applies group, and wakes its commits.
func (o *oracle) commitGroup(group []*commitReq) {
	var merged *pebble.Batch
	var accepted []*commitReq
	o.mu.Lock()
	for _, r := range group {
		// Committed or not, the transaction is over: it leaves the log
		// under this lock rather than take it again.
		r.tx.ended = true
		switch {
		case o.log.conflicts(r.tx.start, r.tx.reads):
			r.err = ErrConflict
		case merged == nil:
			merged = r.pb
		default:
			r.err = merged.Apply(r.pb, nil) // failed: not written
		}
		if r.err == nil {
			r.seq = o.log.recordInFlight(r.w)
			o.sequenced(&r.w, r.seq)
			accepted = append(accepted, r)
		}
		o.endLocked(r.tx.start)
	}
	o.mu.Unlock()
	var err error
	if merged != nil {
		if o.env.applyNoSyncWait != nil {
			err = o.env.applyNoSyncWait(merged)
		} else {
			err = o.env.apply(merged)
		}
		// Applied (or failed: its records only cost others a conflict).
		o.mu.Lock()
		for _, r := range accepted {
			o.log.done(r.seq)
		}
		o.mu.Unlock()
		if err == nil && o.env.applyNoSyncWait != nil {
			err = merged.SyncWait() // outside the lock: commits share fsyncs
		}
	}
	for _, r := range accepted {
		r.err = err
	}
	for _, r := range group {
		r.wake <- struct{}{}
	}
}

// applyRecorded is a plain write while recording: sequenced and recorded
// under the lock, applied after it, so that plain writes insert into the
// memtable side by side.
func (o *oracle) applyRecorded(pb *pebble.Batch, ws func() writeSet) error {
	o.mu.Lock()
	w := ws()
	seq := o.log.recordInFlight(w)
	o.sequenced(&w, seq)
	if stopRecording(o.log.busy(), o.idleSince, time.Now()) {
		o.recording.Store(false)
	}
	o.mu.Unlock()
	err := o.env.apply(pb)
	o.mu.Lock()
	o.log.done(seq)
	o.mu.Unlock()
	return err
}

// opsWriteSet is what ops write, in bytes of its own.
func opsWriteSet(ops []BatchOp) writeSet {
	var w writeSet
	for _, op := range ops {
		if op.Kind == OpDeleteRange {
			w.ranges = append(w.ranges, span{start: cloneOrNil(op.Key), end: cloneOrNil(op.Value)})
			continue
		}
		w.keys = append(w.keys, append([]byte(nil), op.Key...))
	}
	return w
}

// txnWriteSet is what a transaction's ops write: their keys, which are
// the transaction's own and kept as they are (it is over once committed).
func txnWriteSet(ops []BatchOp) writeSet {
	keys := make([][]byte, len(ops))
	for i, op := range ops {
		keys[i] = op.Key
	}
	return writeSet{keys: keys}
}

// cloneOrNil copies b, keeping nil (an open bound) nil.
func cloneOrNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
