// Package scan turns a Pebble iterator into a resumable read-pool task: each
// step fills batches of rows into contiguous buffers, asks the pool whether
// to yield before every batch, and hands the batches to the consumer through
// a bounded buffer.
//
// # Readers
//
// A consumer reads a scan through a [Source], which owns the [Cursor] and,
// if there is one, the task: [Spawn] runs the cursor as a read-pool task
// streaming through a buffer of batches ([Pooled]); [NewDirect] fills batches on the
// goroutine that asks for them ([Direct]) — a store without a pool, or an
// executor that already runs inside a pool step. Both end at once on Close,
// and can be ended from outside with an error (End), e.g. by the store
// closing.
//
// # Batches
//
// A [Cursor] fills a [Batch] with up to its current batch size of rows, in
// one buffer per batch (two allocations per batch at most, none once the
// batch is reused; a scan's first batch is sized from its first row, and a
// stream read to its end gives its batches back for later scans). The batch size grows 32 → 64 → … → 1024 rows within a
// scan, as TiKV's coprocessor does, so short scans stay cheap and long ones
// amortise the per-batch cost; a batch also stops at MaxBatchBytes, so one
// batch of huge values cannot take unbounded memory.
//
// # Reserve before produce
//
// A scan's task takes a free slot of its buffer before it reads the next batch
// (DataFusion's reserve-before-poll): with none free it returns Pending and
// the consumer's next read wakes it. A stream of N slots holds at most N
// batches — filled, being filled, or being read — never N+1.
//
// A consumer quicker than a hand-off between goroutines (under 16 µs a
// batch) does not wake the task for the slot it frees while it still has a
// batch to read; when it has read everything buffered it steps the task on
// its own goroutine ([readpool.Waker.StepHere]), so a fast reader of a long
// scan costs no goroutine switch per batch. A slower consumer wakes the task
// at once, and a worker fills the next batch while it reads.
//
// # Consistency
//
// A task reads one Pebble iterator from its first step to its last, across
// any number of yields, so a scan sees the store as of the moment its
// iterator was opened and nothing written later.
package scan
