package kv

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The oracle orders the store's writes against its transactions: every
// transition of that protocol is in this file. The conflict log
// (conflict.go) is the pure part; here are the locks around it and the
// two paths a write takes.
//
// While no transaction has been open for recordingLinger, recording is
// off and a write goes to Pebble as it always did: its only cost is
// reading the flag. A transaction that begins with recording off turns it
// on holding DB.writeMu exclusively — so that no write that read the flag
// as off is still in flight, unseen by the transaction's snapshot and
// unrecorded — and from then on every write takes oracle.mu. A
// transaction's commit is checked, recorded and applied to Pebble's
// memtable and WAL buffer under the lock, with the commits that wait
// beside it in one batch (commitGrouped), so that commit order and WAL
// order agree, and the fsync is waited for after it (Pebble's
// ApplyNoSyncWait), so syncs still group. A plain write, which read
// nothing, is only sequenced and recorded under the lock and applied after
// it, beside other plain writes (applyRecorded). A transaction's start is
// taken under the lock, its snapshot just after (beginTxn).
//
// Locks are taken in the order DB.mu, DB.writeMu, oracle.qmu (let go
// before the next), oracle.mu.

// recordingLinger is how long writes go on recording after the last
// transaction ended: long enough that a loop of short transactions does
// not turn recording on (which waits for the writes in flight) for each.
const recordingLinger = time.Second

// oracle is the DB's; ready once its seed is set (finishOpen).
type oracle struct {
	// recording is read without mu by every write, holding writeMu
	// shared; it turns on holding writeMu exclusively and mu, and off
	// holding mu with no transaction open.
	recording atomic.Bool
	mu        sync.Mutex
	log       conflictLog
	idleSince time.Time // when the last open transaction ended; under mu

	// written holds, for each stripe of keys, the sequence of the last
	// write sequenced while recording that wrote one of them, and
	// rangeWritten that of the last range deletion: stored under mu before
	// the write reaches Pebble, read without it by a transaction that
	// would serve a read from the row cache — a hit is the value as of
	// its start only if nothing of the key's stripe was written since
	// (unwrittenSince).
	seed         maphash.Seed
	written      [oracleStripes]atomic.Uint64
	rangeWritten atomic.Uint64

	// The commits waiting for the group being committed (commitGrouped),
	// and whether one is.
	qmu     sync.Mutex
	queue   []*commitReq
	leading bool
}

// oracleStripes is the number of stripes of written: 32 KiB.
const oracleStripes = 1 << 12

// sequenced notes that w was sequenced at seq; under mu.
func (o *oracle) sequenced(w *writeSet, seq uint64) {
	for _, k := range w.keys {
		o.written[maphash.Bytes(o.seed, k)%oracleStripes].Store(seq)
	}
	if len(w.ranges) > 0 {
		o.rangeWritten.Store(seq)
	}
}

// unwrittenSince reports whether no write sequenced after start can have
// written key. Read after the cache lookup it guards, it sees any write
// whose value the lookup saw (the write stored its sequence first).
func (o *oracle) unwrittenSince(key []byte, start uint64) bool {
	return o.written[maphash.Bytes(o.seed, key)%oracleStripes].Load() <= start && o.rangeWritten.Load() <= start
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

// beginTxn opens a transaction: its start in the log, and a Pebble
// snapshot holding every write sequenced up to it. The snapshot is taken
// after the lock is let go: every write sequenced up to start has landed
// by then (a commit lands under the lock; a plain write in flight moves
// start before it), and one it holds beyond start can only make the
// transaction conflict where it need not. The caller holds db.mu shared.
func (db *DB) beginTxn() (uint64, *pebble.Snapshot) {
	return db.beginInLog(), db.pdb.NewSnapshot()
}

// beginInLog is beginTxn's part under the lock.
func (db *DB) beginInLog() uint64 {
	o := &db.oracle
	if o.recording.Load() {
		o.mu.Lock()
		if o.recording.Load() { // not turned off meanwhile
			defer o.mu.Unlock()
			return o.log.begin()
		}
		o.mu.Unlock()
	}
	db.writeMu.Lock() // no unrecorded write in flight
	defer db.writeMu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recording.Store(true)
	return o.log.begin()
}

// endTxn closes a transaction begun at start, committed or not.
func (db *DB) endTxn(start uint64) {
	o := &db.oracle
	o.mu.Lock()
	o.endLocked(start)
	o.mu.Unlock()
}

// endLocked is endTxn under mu.
func (o *oracle) endLocked(start uint64) {
	o.log.end(start)
	if !o.log.busy() {
		o.idleSince = time.Now()
	}
}

// applyBatch commits pb — a write of what ws returns, built only when a
// transaction needs it — after checking tx, when not nil, against the
// writes since it began (ErrConflict: nothing written). The caller holds
// writeMu, shared or alone.
func (db *DB) applyBatch(pb *pebble.Batch, ws func() writeSet, tx *txnCheck) error {
	o := &db.oracle
	if tx == nil {
		if !o.recording.Load() {
			return db.pdb.Apply(pb, db.wopts)
		}
		return db.applyRecorded(pb, ws)
	}
	return db.commitGrouped(&commitReq{pb: pb, w: ws(), tx: tx, done: make(chan struct{})})
}

// commitReq is a transaction's commit waiting for the group it joins.
type commitReq struct {
	pb   *pebble.Batch
	w    writeSet
	tx   *txnCheck
	err  error
	done chan struct{} // closed once the group is applied
}

// commitGrouped commits r with the commits that wait beside it: the first
// to find no group being committed leads — it checks each waiting commit
// in turn under the lock, records those without a conflict, and applies
// them as one Pebble batch, in the order they were checked — while the
// others wait for it. One pass through Pebble's commit pipeline then
// serves a group, where each commit took one under the lock before.
func (db *DB) commitGrouped(r *commitReq) error {
	o := &db.oracle
	o.qmu.Lock()
	o.queue = append(o.queue, r)
	if o.leading {
		o.qmu.Unlock()
		<-r.done
		return r.err
	}
	o.leading = true
	for {
		group := o.queue
		o.queue = nil
		o.qmu.Unlock()
		db.commitGroup(group)
		o.qmu.Lock()
		if len(o.queue) == 0 {
			o.leading = false
			o.qmu.Unlock()
			return r.err
		}
	}
}

// commitGroup checks, records and applies group, and wakes its commits.
func (db *DB) commitGroup(group []*commitReq) {
	o := &db.oracle
	var merged *pebble.Batch
	var accepted []*commitReq
	o.mu.Lock()
	for _, r := range group {
		// Committed or not, the transaction is over: it leaves the log
		// under this lock rather than take it again.
		r.tx.ended = true
		if o.log.conflicts(r.tx.start, r.tx.reads) {
			r.err = ErrConflict
			o.endLocked(r.tx.start)
			continue
		}
		o.sequenced(&r.w, o.log.record(r.w)) // kept: its transaction is open
		o.endLocked(r.tx.start)
		if merged == nil {
			merged = r.pb
		} else if err := merged.Apply(r.pb, nil); err != nil {
			r.err = err // not written; its record only costs others a conflict
			continue
		}
		accepted = append(accepted, r)
	}
	var err error
	if merged != nil {
		if db.wopts.Sync {
			err = db.pdb.ApplyNoSyncWait(merged, db.wopts)
		} else {
			err = db.pdb.Apply(merged, db.wopts)
		}
	}
	o.mu.Unlock()
	if err == nil && merged != nil && db.wopts.Sync {
		err = merged.SyncWait() // outside the lock: commits share fsyncs
	}
	for _, r := range accepted {
		r.err = err
	}
	for _, r := range group {
		close(r.done)
	}
}

// applyRecorded is a plain write while recording: sequenced and recorded
// under the lock, applied after it, so that plain writes insert into the
// memtable side by side. Order is kept where it matters: a transaction's
// commit is checked and applied under the lock, so a write sequenced after
// it lands after it; one sequenced before it is in the log it is checked
// against; and one still in flight when a transaction begins counts as
// after its start (conflictLog.begin).
func (db *DB) applyRecorded(pb *pebble.Batch, ws func() writeSet) error {
	o := &db.oracle
	o.mu.Lock()
	w := ws()
	seq := o.log.recordInFlight(w)
	o.sequenced(&w, seq)
	if stopRecording(o.log.busy(), o.idleSince, time.Now()) {
		o.recording.Store(false)
	}
	o.mu.Unlock()
	err := db.pdb.Apply(pb, db.wopts)
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
