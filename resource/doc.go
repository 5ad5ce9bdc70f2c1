// Package resource is coopkv's resource control: resource groups with a
// share of the read pool in request units per second (RU/s), a priority
// class and an optional limit, and the Scheduler that orders the read
// pool's tasks by fair share.
//
// # Groups
//
// A [Manager] holds a store's groups; [DefaultGroup] always exists. A
// request names its group (kv.WithResourceGroup); an unknown group runs as
// default. Changes apply at runtime to tasks queued after them. At most
// [MaxGroups] groups exist at once.
//
// # Request units
//
// 1 RU is 3 ms of read-pool step time, 64 KiB read or 8 requests (TiDB's
// model). The [Scheduler], as the pool's accountant, charges every step's
// time and bytes to its task's group, and each request once.
//
// # Fair order, limits, admission
//
// See [Scheduler]: groups advance a virtual time by RU ÷ share and the
// group furthest behind runs first, classes strictly ahead of lower ones; a
// group that is not burstable is held to its RU/s by a token bucket whose
// waiting tasks hold no worker; each class has its own room, and a full
// class still admits a group up to its share of it.
//
// # Runaway reads
//
// A group's [RunawayRule] (GroupConfig.Runaway; kv.Options.Runaway
// without resource control) marks a read runaway once its worker time or
// its rows read pass a limit, as TiDB's runaway queries do; its action
// then dry-runs (counts and logs), cools it down or kills it. [Runaways]
// is the read path's side: [Runaways.NewRead] at a read's spawn (a live
// watch may make it runaway from its first step), [Runaways.Observe] after
// each step with the read's totals and [Group.Runaway], the rule in force
// then — so a rule changed by Put applies from each read's next step. The
// watch list is bounded (when full, the watch expiring soonest goes) and
// its entries expire. The policy itself is pure (judge, watchList), time
// passed in, tested without goroutines; Runaways wraps it with one mutex
// that the common case, no rule caught and no watch live, never takes.
package resource
