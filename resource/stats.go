package resource

import "time"

// GroupStats is a JSON-encodable snapshot of one group.
type GroupStats struct {
	Name      string  `json:"name"`
	Priority  string  `json:"priority"`
	RUPerSec  float64 `json:"ru_per_sec"` // share, and limit unless burstable; 0 = unlimited
	Burstable bool    `json:"burstable"`
	// RU is what the group has consumed in all; RULastSecond over the last
	// second (in 100 ms slots).
	RU           float64 `json:"ru"`
	RULastSecond float64 `json:"ru_last_second"`
	Queued       int64   `json:"queued"`  // ready to run
	Running      int64   `json:"running"` // stepping
	Held         int64   `json:"held"`    // waiting for the group's tokens
	// VirtualTime is the group's fair-share clock: RU consumed ÷ RU/s.
	VirtualTime time.Duration `json:"virtual_time_ns"`
	// Throttled is the time its tasks have been held by its limit.
	Throttled    time.Duration `json:"throttled_ns"`
	RejectedBusy int64         `json:"rejected_busy"`
	// Runaway is the group's runaway rule; absent for none.
	Runaway *RunawayRule `json:"runaway,omitempty"`
}

// Stats returns every group's figures, by name. Counts are read one by
// one, without the scheduler's lock: a snapshot under load may be off by
// the tasks that moved while it was taken.
func (m *Manager) Stats() []GroupStats {
	now := m.clock()
	groups := m.all()
	out := make([]GroupStats, 0, len(groups))
	for _, g := range groups {
		cfg := g.cfg.Load()
		out = append(out, GroupStats{
			Name:         g.name,
			Priority:     cfg.Priority.String(),
			RUPerSec:     cfg.RUPerSec,
			Burstable:    cfg.Burstable,
			RU:           float64(g.ru.Load()) / microRU,
			RULastSecond: g.window.lastSecond(now),
			Queued:       g.queued.Load(),
			Running:      g.running.Load(),
			Held:         g.held.Load(),
			VirtualTime:  time.Duration(g.vtime.Load()),
			Throttled:    time.Duration(g.throttled.Load()),
			RejectedBusy: g.rejected.Load(),
			Runaway:      cfg.Runaway.clone(),
		})
	}
	return out
}
