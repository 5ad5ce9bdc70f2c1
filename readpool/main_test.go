package readpool

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// ants (a benchmark baseline) starts a default pool when its package
		// is initialised, and that pool's goroutines live for the process.
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}

// funcTask adapts functions to Task for tests.
type funcTask struct {
	step func(sc *StepContext) Status
	done func(err error)
}

func (t *funcTask) Step(sc *StepContext) Status { return t.step(sc) }
func (t *funcTask) Done(err error) {
	if t.done != nil {
		t.done(err)
	}
}

// doneTask returns a task running step and a channel that receives its
// Done error.
func doneTask(step func(sc *StepContext) Status) (*funcTask, chan error) {
	ch := make(chan error, 1)
	return &funcTask{step: step, done: func(err error) { ch <- err }}, ch
}
