package stripe

import (
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

func TestCounter_SumsEveryStripe(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 1000 {
				c.Add(uint64(g*1000+i), 1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 16000, c.Load())
	c.Add(3, -16000)
	assert.Zero(t, c.Load())
	assert.Equal(t, uintptr(64), unsafe.Sizeof(c.s[0]), "a stripe per cache line")
}
