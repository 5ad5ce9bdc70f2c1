// Package bench is kvbench's engine and its workloads, apart from any
// one binary, so that the embedded kvbench and a binary over another
// kv.Store (kv/tikv's) run the same workloads the same way.
//
// A [Workload] owns its flags, their validation, its clients, its phases
// (noisy's quiet phase, cop's baseline, groups' phase with one group
// alone), its summary lines and its verdicts (soak's checks). [Run] owns
// the rest, once for every workload: it loads the store, opens a store
// per scheduler through the binary's [Stores], runs each phase — a
// warm-up, then a measured phase — stops at an interruption (the run's
// context ending: Ctrl-C), and reports the results as a table, JSON
// (--json) and a plot (--plot), with progress on stderr.
//
// The store is a [kv.Store]. What only some stores have — resource
// groups, a flush of the memtables, a read pool and its schedulers — is
// asked of the store itself (an interface it may implement), so a store
// without them runs every workload that does not need them: the groups
// workloads say so at once.
package bench
