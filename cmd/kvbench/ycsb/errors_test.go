package main

import (
	"context"
	"errors"
	"testing"

	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingReads fails each read with the error next in errs.
type failingReads struct {
	ycsb.DB
	errs []error
}

func (f *failingReads) Read(context.Context, string, string, []string) (map[string][]byte, error) {
	err := f.errs[0]
	f.errs = f.errs[1:]
	return nil, err
}

func TestErrorRecorder_KeepsTheFirstError(t *testing.T) {
	first, second := errors.New("first"), errors.New("second")
	r := &errorRecorder{DB: &failingReads{errs: []error{nil, first, second}}}
	assert.Empty(t, r.firstError())
	_, err := r.Read(context.Background(), "t", "k", nil)
	require.NoError(t, err)
	assert.Empty(t, r.firstError(), "a call that succeeded is no error")
	_, err = r.Read(context.Background(), "t", "k", nil)
	assert.Same(t, first, err, "the error is passed on")
	_, err = r.Read(context.Background(), "t", "k", nil)
	assert.Same(t, second, err)
	assert.Equal(t, "first", r.firstError())
}
