// Package coproctest checks a coprocessor against a reference: a naive
// evaluator of [coproc.Request] written from the documented semantics,
// row by row, with none of coproc's executors, and random datasets and
// requests to feed both. It is for tests, in the spirit of
// testing/fstest: the embedded store (package kv) and the TiKV store
// (kv/tikv), whose coprocessor runs in the client over region scans, are
// both checked against the same reference by [Run].
//
// # Pieces
//
//   - [NewDataset] draws random rows of mixed types ([Columns]): numbers
//     of every width (sums that overflow int64 or turn float), strings and
//     bytes that collide, bools, nulls, missing columns. A store under
//     test loads [Dataset.Rows].
//   - [Dataset.Request] draws a random valid request over them: filters
//     over every op, projections, group-by with every aggregate, top-N,
//     limits, paging, both directions, several ranges.
//   - [Reference] answers a request over rows, unpaged.
//   - [Check] runs one request against a coprocessor (through every page
//     when it pages) and compares its answer with Reference's, with
//     [RowEqual]: numbers by value whatever their types, float sums and
//     averages within a tolerance, groups as a multiset unless ordered.
//   - [Run] does all of it for a store: datasets, requests, seeds.
//
// # Caveats
//
// Only valid requests are drawn, and the one error a valid request may
// meet here is [coproc.ErrOverflow] (an exact integer sum leaving int64);
// validation and bad rows are tested where they are implemented. Stats
// are checked only where the documentation promises them: RowsReturned,
// RowsScanned of an unpaged request that reads every row in its ranges,
// and at most PagingSize rows scanned per page.
//
// Randomness is seeded: a failure names its seed, dataset and request,
// and [Config.Seed] replays it.
package coproctest
