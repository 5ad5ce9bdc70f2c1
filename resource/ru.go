package resource

import (
	"sync/atomic"
	"time"
)

// Request units, TiDB's model of what a read costs: 1 RU is 3 ms of
// read-pool step time, or 64 KiB read, or 8 read requests.
const (
	RUExec      = 3 * time.Millisecond
	RUBytes     = 64 << 10
	RURequests  = 8
	microRU     = 1e6 // RU are kept in integer micro-RU
	windowSlots = 10
	windowSlot  = 100 * time.Millisecond
)

// RU returns the request units of a step that ran for exec and read bytes,
// plus a request's own charge when request is set (once per request).
func RU(exec time.Duration, bytes int64, request bool) float64 {
	ru := float64(exec)/float64(RUExec) + float64(bytes)/RUBytes
	if request {
		ru += 1.0 / RURequests
	}
	return ru
}

// ruWindow keeps a group's RU over the last second in ten 100 ms slots. A
// slot is claimed for its period by a CAS on its epoch; a charge that races
// with the claim may be lost, which the figure, a rate for display, can
// afford.
type ruWindow struct {
	slots [windowSlots]struct {
		epoch atomic.Int64
		ru    atomic.Uint64
	}
}

func (w *ruWindow) add(now time.Duration, micro uint64) {
	ep := int64(now / windowSlot)
	s := &w.slots[ep%windowSlots]
	if e := s.epoch.Load(); e != ep && s.epoch.CompareAndSwap(e, ep) {
		s.ru.Store(0)
	}
	s.ru.Add(micro)
}

// lastSecond is the RU charged in the current slot and the nine before it.
func (w *ruWindow) lastSecond(now time.Duration) float64 {
	ep := int64(now / windowSlot)
	var sum uint64
	for i := range w.slots {
		s := &w.slots[i]
		if e := s.epoch.Load(); e > ep-windowSlots && e <= ep {
			sum += s.ru.Load()
		}
	}
	return float64(sum) / microRU
}
