//go:build race

package main

// raceEnabled says the tests run under the race detector, where go-ycsb
// v1.0.3 and bolt v1.3.1 cannot run: go-ycsb's key generators share
// unsynchronised state between threads, its badger binding hands its
// encode buffer back to a pool before the transaction commits, and bolt
// v1.3.1's page arithmetic fails checkptr.
const raceEnabled = true
