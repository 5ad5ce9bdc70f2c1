package bench

import (
	"bytes"
	"context"
	"time"
)

// The soak's checker: every key against the model, every interval and at
// the end of the phase.

// checker checks every key every o.every and once more at the end of the
// phase, after the other clients have stopped; it then records the
// phase's failures, each as an error of the class of the read that saw
// it. It times nothing.
func (s *soakRun) checker(ctx context.Context, rec *recorder) {
	t := time.NewTimer(s.o.every)
	defer t.Stop()
	for done := false; !done; {
		select {
		case <-t.C:
			t.Reset(s.o.every)
		case <-ctx.Done():
			done = true
			s.others.Wait() // the writers are still: the check is final
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), soakFinalCheckTimeout)
			defer cancel()
		}
		s.gate.Lock()
		if s.o.tamper != nil {
			s.o.tamper(s.e.db, s.m)
		}
		err := s.checkAll(ctx)
		s.gate.Unlock()
		if err != nil && !done && ctx.Err() != nil {
			err = nil // the phase ended during the check: the final one follows
		}
		if err != nil {
			s.fail(classScan, "full check: %v", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.failures {
		rec.record(f.class, 0, f)
	}
	for c, n := range s.lost {
		for range n {
			rec.record(c, 0, &soakFailure{class: c, seq: soakKeepFailures, what: "(a failure past the first kept)"})
		}
	}
}

// checkAll scans the subset and compares every key with the model. The
// writers are paused; keys whose value is unknown (a failed write) are
// skipped.
func (s *soakRun) checkAll(ctx context.Context) error {
	it := s.e.db.Scan(ctx, []byte(soakPrefix), []byte(soakEnd), nil)
	defer it.Close()
	next := 0 // the first key not yet compared
	missing := func(upTo int) {
		for ; next < upTo; next++ {
			if want, ok := s.m.keys[next].known(); ok && want != nil {
				s.fail(classScan, "full check, key %s: the store has %s, the model %s",
					soakKeyBytes(nil, next), describeSoakValue(nil, false), describeModel(want))
			}
		}
	}
	for key, v := range it.All() {
		n, ok := soakKeyNumber(key, s.o.keys)
		if !ok {
			s.fail(classScan, "full check: the store holds %q under %s, which is not a key of the subset", key, soakPrefix)
			continue
		}
		missing(n)
		next = n + 1
		want, ok := s.m.keys[n].known()
		if !ok {
			continue // unknown after a failed write
		}
		if want == nil || !bytes.Equal(v, want.row) {
			s.fail(classScan, "full check, key %s: the store has %s, the model %s",
				key, describeSoakValue(v, true), describeModel(want))
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	missing(s.o.keys)
	return nil
}
