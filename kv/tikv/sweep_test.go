package tikv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tikverr "github.com/tikv/client-go/v2/error"

	"github.com/coopkv/coopkv/kv"
)

// rawExists reports whether TiKV holds store key k at a fresh timestamp,
// expired or not.
func rawExists(t *testing.T, s *Store, k []byte) bool {
	t.Helper()
	_, err := s.kvs.GetSnapshot(maxReadTS(t, s)).Get(context.Background(), k)
	if tikverr.IsErrNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// sweepOnce makes s's sweeper try once more now (its interval is an hour,
// so that no try runs while a test moves the cluster's clock: a
// transaction across a jump of minutes finds its own locks expired), and
// waits for that try to end.
func sweepOnce(t *testing.T, s *Store) {
	t.Helper()
	before := s.sweep.rounds.Load()
	s.sweep.kick <- struct{}{}
	require.Eventually(t, func() bool { return s.sweep.rounds.Load() > before }, 20*time.Second, time.Millisecond)
}

// writeExpiring sets n keys with a TTL of a minute, and n without.
func writeExpiring(t *testing.T, s *Store, n int) {
	t.Helper()
	b := s.NewBatch()
	for i := range n {
		b.SetWithTTL(fmt.Appendf(nil, "ttl%04d", i), []byte("v"), time.Minute)
		b.Set(fmt.Appendf(nil, "plain%04d", i), []byte("v"))
	}
	require.NoError(t, s.Write(context.Background(), b))
}

// The store holding the sweep lease deletes the expired keys under its
// prefix, and only those; the lease itself is no key of the caller's.
func TestSweep_DeletesExpiredKeysUnderTheLease(t *testing.T) {
	kvs, advance := mockKVStoreClock(t)
	s, err := New(kvs, &Options{SweepInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	writeExpiring(t, s, 300)
	advance(2 * time.Minute)
	sweepOnce(t, s)
	st := s.SweepStats()
	require.EqualValues(t, 300, st.Swept, "%+v", st)
	for i := range 300 {
		require.False(t, rawExists(t, s, s.ks.key(fmt.Appendf(nil, "ttl%04d", i))), "key %d swept", i)
		require.True(t, rawExists(t, s, s.ks.key(fmt.Appendf(nil, "plain%04d", i))))
	}
	assert.True(t, rawExists(t, s, s.ks.prefix), "the lease")
	it := s.Scan(context.Background(), nil, nil, nil)
	n := 0
	for k := range it.All() {
		require.NotEmpty(t, k, "the lease is not a row")
		n++
	}
	require.NoError(t, it.Close())
	assert.Equal(t, 300, n)
	assert.True(t, st.Enabled)
	assert.EqualValues(t, 300, st.Expired)
	assert.EqualValues(t, 1, st.Passes)
}

// While another client holds the lease live, this one does not sweep; once
// the lease has expired, it takes it and sweeps.
func TestSweep_OneClientAtATime(t *testing.T) {
	kvs, advance := mockKVStoreClock(t)
	// Another client's lease, live for an hour, before this store starts.
	kt, err := kvs.Begin()
	require.NoError(t, err)
	lease := []byte(DefaultPrefix)
	require.NoError(t, kt.Set(lease, encodeValue([]byte("another"), tsNanos(kt.StartTS())+int64(time.Hour))))
	require.NoError(t, kt.Commit(context.Background()))

	s, err := New(kvs, &Options{SweepInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	writeExpiring(t, s, 10)
	advance(2 * time.Minute)
	for range 3 {
		sweepOnce(t, s)
	}
	assert.Zero(t, s.SweepStats().Passes, "the lease is another's")
	assert.True(t, rawExists(t, s, s.ks.key([]byte("ttl0000"))))

	advance(time.Hour) // the other client is gone: its lease expires
	sweepOnce(t, s)
	assert.EqualValues(t, 10, s.SweepStats().Swept)
	_, err = s.Get(context.Background(), []byte("ttl0000"))
	assert.ErrorIs(t, err, kv.ErrNotFound)
}

// With a negative SweepInterval the store runs no sweeper.
func TestSweep_Off(t *testing.T) {
	s := openMock(t, &Options{SweepInterval: -1})
	assert.Nil(t, s.sweep)
	assert.False(t, s.SweepStats().Enabled)
}

// A prefix with no key with a TTL is swept once, and then only every
// sweepIdle, however often the store renews its lease; a write with a TTL
// brings the sweeps back at each try while one is seen.
func TestSweep_IdleWithoutTTLs(t *testing.T) {
	kvs, _ := mockKVStoreClock(t)
	s, err := New(kvs, &Options{SweepInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	b := s.NewBatch()
	b.Set([]byte("plain"), []byte("v"))
	require.NoError(t, s.Write(context.Background(), b))
	for range 5 {
		sweepOnce(t, s)
	}
	assert.EqualValues(t, 1, s.SweepStats().Passes, "one sweep, then idle")

	b = s.NewBatch()
	b.SetWithTTL([]byte("session"), []byte("v"), time.Hour)
	require.NoError(t, s.Write(context.Background(), b))
	for range 3 {
		sweepOnce(t, s)
	}
	assert.EqualValues(t, 4, s.SweepStats().Passes, "a sweep at each try while a key with a TTL is seen")
}
