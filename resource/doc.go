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
package resource
