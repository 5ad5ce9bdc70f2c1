// Package coproc is coopkv's coprocessor: requests that push filters,
// projections, aggregates and top-N into a scan, so that a caller asks
// "count, sum, group, filter, top-N over a key range" without pulling every
// row out of the store.
//
// Rows are values stored as msgpack maps ([EncodeRow], [DecodeRow]); the
// key is the column "_key". A request runs in the read pool as one task: a
// pipeline of batch executors whose leaf is a scan source, yielding between
// batches. Requests and responses travel as msgpack ([Encode], [Decode]);
// decoding checks every declared length and the nesting depth before
// msgpack allocates anything, so hostile bytes are an error, never a crash.
package coproc
