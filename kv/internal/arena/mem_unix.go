//go:build unix

package arena

import "syscall"

// mapMemory maps n bytes of anonymous memory, reserved without swap
// (MAP_NORESERVE where the system has it): the pages cost nothing until
// first written.
func mapMemory(n int) ([]byte, func() error, error) {
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|mapNoReserve)
	if err != nil {
		return nil, nil, err
	}
	return mem, func() error { return syscall.Munmap(mem) }, nil
}
