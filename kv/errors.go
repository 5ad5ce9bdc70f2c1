package kv

import "errors"

var (
	// ErrNotFound is returned by Get for a key that is not in the store.
	ErrNotFound = errors.New("kv: not found")
	// ErrClosed is returned by every call after Close (a Scan's Err says so).
	ErrClosed = errors.New("kv: closed")
	// ErrBusy is returned when the read pool holds MaxTasks queued and
	// running reads. Nothing was done; retry later.
	ErrBusy = errors.New("kv: busy")
	// ErrInvalidRange is returned (by a Scan's Err) for a range whose start
	// is after its end, both being non-nil.
	ErrInvalidRange = errors.New("kv: invalid range")
	// ErrEmptyKey is returned by Set, Delete, Get and Apply for a nil or
	// empty key.
	ErrEmptyKey = errors.New("kv: empty key")
)
