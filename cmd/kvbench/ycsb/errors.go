package main

import (
	"context"
	"sync/atomic"

	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// errorRecorder passes every call to DB and keeps the first error one
// returns: go-ycsb counts a failed operation (*_ERROR) but drops its error,
// and a count says nothing of the cause.
type errorRecorder struct {
	ycsb.DB
	first atomic.Pointer[error]
}

// note records err if it is the phase's first, and returns it.
func (r *errorRecorder) note(err error) error {
	if err != nil {
		r.first.CompareAndSwap(nil, &err)
	}
	return err
}

// firstError is the first error a call returned, or "".
func (r *errorRecorder) firstError() string {
	if p := r.first.Load(); p != nil {
		return (*p).Error()
	}
	return ""
}

func (r *errorRecorder) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	m, err := r.DB.Read(ctx, table, key, fields)
	return m, r.note(err)
}

func (r *errorRecorder) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	rows, err := r.DB.Scan(ctx, table, startKey, count, fields)
	return rows, r.note(err)
}

func (r *errorRecorder) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	return r.note(r.DB.Update(ctx, table, key, values))
}

func (r *errorRecorder) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	return r.note(r.DB.Insert(ctx, table, key, values))
}

func (r *errorRecorder) Delete(ctx context.Context, table, key string) error {
	return r.note(r.DB.Delete(ctx, table, key))
}
