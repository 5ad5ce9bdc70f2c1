package readpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A hit is judged by the entry Spawn would queue: a read in cooldown, or
// one whose time the MLFQ must account (a task id), is not served on its
// caller, so it waits its turn as its task would; a plain read is served
// and counted.
func TestBypass_JudgedAsItsTask(t *testing.T) {
	p := newPool(t, Options{Workers: 1, CooledSlots: 1})
	for _, c := range []struct {
		name string
		o    SpawnOptions
		want bool
	}{
		{name: "a plain read", want: true},
		{name: "pinned to the top", o: SpawnOptions{Fixed: true}, want: true},
		{name: "demoted", o: SpawnOptions{Demoted: true}},
		{name: "demoted and pinned to the top", o: SpawnOptions{Demoted: true, Fixed: true}},
		{name: "with a task id", o: SpawnOptions{TaskID: 7}},
	} {
		served := false
		got := p.Bypass(c.o, func() (int64, bool) { served = true; return 1, true })
		assert.Equal(t, c.want, got, c.name)
		assert.Equal(t, c.want, served, c.name)
	}
	assert.EqualValues(t, 2, p.Stats().Bypassed)
}
