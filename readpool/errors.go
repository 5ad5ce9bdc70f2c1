package readpool

import (
	"errors"
	"fmt"
)

var (
	// ErrBusy is returned by Spawn when MaxTasks tasks are queued or
	// running. Nothing was started; the caller may retry later.
	ErrBusy = errors.New("readpool: busy")
	// ErrClosed is returned by Spawn after Close, and is the error a task
	// is completed with when Close finds it queued, waiting or yielding.
	ErrClosed = errors.New("readpool: closed")
)

// PanicError is the error a task is completed with when its Step panicked.
// The worker that ran it recovered and goes on.
type PanicError struct {
	// Value is what the step passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("readpool: task panicked: %v\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
