//go:build !invariants && !race

package readpool

const invariants = false

type poolInvariants struct{}

func (*poolInvariants) accept()            {}
func (*poolInvariants) checkDrained(*Pool) {}
func checkOnce(*Handle)                    {}
func (p *Pool) checkLocked()               {}
