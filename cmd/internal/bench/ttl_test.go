package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun_TTL runs ttl briefly with sessions that expire within the phase:
// the writer's sets, the readers' Gets and the reads of expired sessions
// report without errors (every session read lives, and no expired one
// is returned), and the lines under the table say what the sweeper did.
func TestRun_TTL(t *testing.T) {
	rep, out := runTiny(t, lookup(t, "ttl"), "--schedulers", "mlfq", "--duration", "2500ms", "--rate", "400", "--ttl", "300ms", "--clients", "2")
	var classes []string
	for _, r := range rep.Results {
		classes = append(classes, r.Workload+" "+r.Class)
		assert.Positive(t, r.Ops, "%s %s", r.Workload, r.Class)
		assert.Zero(t, r.Errors, "%s %s: a live session read as missing?\n%s", r.Workload, r.Class, out)
	}
	assert.Equal(t, []string{"ttl get", "ttl update", "ttl expired get"}, classes)
	if x := rep.Results[0].Expiry; assert.NotNil(t, x, "the Gets carry the sessions' figures") {
		assert.Positive(t, x.Written)
		assert.InDelta(t, 120, x.RateTTL, 0.001)
		assert.True(t, x.Sweeping)
	}
	assert.Nil(t, rep.Results[1].Expiry, "the updates do not")
	assert.Regexp(t, `(?m)^ttl mlfq: sessions held \d+ at the end, \S+× rate × TTL \(120\) \(want ≤ 1.1×\): (ok|missed)$`, out)
	assert.Regexp(t, `(?m)^ttl mlfq: disk against the live sessions: not judged`, out)
	assert.Regexp(t, `(?m)^ttl mlfq: the sweeper found \d+ expired keys/s and deleted \d+/s$`, out)
}

// ttlSummary's verdicts: held against rate × TTL, the disk against the
// live sessions after the first minute only.
func TestTTLSummary(t *testing.T) {
	smps := []ttlSample{
		{at: 30 * time.Second, written: 300, live: 100, swept: 150, disk: 1 << 20, measured: true, sweeping: true},
		{at: 61 * time.Second, written: 610, live: 100, expired: 505, swept: 500, disk: 300 * 100, measured: true, sweeping: true},
	}
	summary := func(smps []ttlSample) string { return ttlSummary("mlfq", smps, ttlFigures(smps, 100, 100)) }
	assert.Equal(t, &Expiry{RateTTL: 100, Written: 610, Live: 100, Held: 110, HeldFactor: 1.1,
		ExpiredPerSec: 505.0 / 61, SweptPerSec: 500.0 / 61, Sweeping: true, DiskBytes: 300 * 100, DiskFactor: 3},
		ttlFigures(smps, 100, 100), "the JSON's figures")
	out := summary(smps)
	assert.Contains(t, out, "ttl mlfq: sessions held 110 at the end, 1.10× rate × TTL (100) (want ≤ 1.1×): ok\n")
	assert.Contains(t, out, "ttl mlfq: disk after the first minute at most 3.00× the live sessions' bytes (want ≤ 2×): missed\n")
	assert.Contains(t, out, "expired found 505, deleted 500, disk 0.0 MiB (tables 0.0 MiB, WAL 0.0 MiB)\n")
	smps[1].swept = 400
	assert.Contains(t, summary(smps), "sessions held 210 at the end, 2.10× rate × TTL (100) (want ≤ 1.1×): missed")
	assert.Nil(t, ttlFigures([]ttlSample{{}}, 100, 100), "not the embedded store: no figures")
	require.True(t, strings.HasPrefix(ttlSummary("tikv", []ttlSample{{}}, nil), "\nttl tikv: the store has no sweeper figures"))
	smps[1].sweeping = false
	assert.Contains(t, summary(smps), "ttl mlfq: the sweeper is off (--no-sweep)\n")
	assert.Zero(t, ttlFigures(smps, 100, 100).SweptPerSec, "no sweeper, no rates")
}
