package readpool

// A Governor watches each task's totals after every step and may change how
// the task goes on: run it at the lowest priority from its next step, or end
// it there. Runaway reads are the use (TiDB's runaway queries: KILL,
// COOLDOWN): the policy — which limits, which action, watches — is the
// Governor's; the pool only applies the verdict at the task's next step
// boundary, which is the only place a cooperative task can be stopped.
type Governor interface {
	// Govern is called after each step of e (t is its task), on the
	// goroutine that ran the step, off the pool's locks, with e.Elapsed
	// and e.Rows updated by the step. It must be cheap: it runs on every
	// step of every task. It may keep state of its own in e.Governed.
	Govern(e *Entry, t Task) Verdict
}

// Verdict is what a Governor decided after a step.
type Verdict struct {
	// Demote runs the task at the queue's lowest priority from its next
	// step (Entry.Demoted: the MLFQ's last level), and false as the queue
	// would otherwise: the verdict says how the task runs now, so a
	// Governor whose rule was lifted may lift the demotion too.
	Demote bool
	// Stop, when set, ends the task at its next step boundary with this
	// error, as a Cancel would: at once if it is waiting or queued.
	Stop error
}

// govern applies the Governor's verdict on e after a step of h that did not
// end it. On the stepping goroutine, which owns the entry (POLLING): the
// queue sees Demoted at the next Push.
func (p *Pool) govern(h *Handle) {
	v := p.opts.Governor.Govern(&h.e, h.t)
	h.e.Demoted = v.Demote
	if v.Stop != nil {
		h.cancelGen(h.gen, v.Stop)
	}
}
