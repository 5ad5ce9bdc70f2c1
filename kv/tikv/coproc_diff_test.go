package tikv

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc/coproctest"
	"github.com/coopkv/coopkv/kv"
)

var (
	diffSeed     = flag.Uint64("coproc-seed", 0, "seed of TestCoprocessor_Differential (0 = from the clock); a failing run prints its seed")
	diffRequests = flag.Int("coproc-requests", 800, "random requests of TestCoprocessor_Differential; raise it for a long run")
)

// diffSplits split the mock cluster inside the datasets' keys
// (coproctest.Key(0) to Key(4000) at most), so that the requests' ranges
// start, end, page and stop in several regions, and on their boundaries.
var diffSplits = func() [][]byte {
	var splits [][]byte
	for _, i := range []int{60, 300, 700, 1500, 2600} {
		splits = append(splits, append([]byte(DefaultPrefix), coproctest.Key(i)...))
	}
	return splits
}()

// TestCoprocessor_Differential checks the Store's coprocessor, which runs
// in the client over region scans, against coproctest's reference
// evaluator, as kv's test of the same name checks the embedded store's:
// random datasets of mixed-type rows on a mock cluster split into six
// regions, and random requests (filters over every op, projections,
// group-by with every aggregate, top-N, limits, paging, both directions,
// several ranges). The datasets alternate between reading the regions in
// parallel (the default CoprocessorConcurrency) and one after another
// (1). It found a reverse scan that asked a region for keys outside it
// (TestScan_ReverseDownToAKeyAtARegionBoundary).
//
// Replay a failure with -coproc-seed=N (the seed is logged); run longer with
// -coproc-requests=N.
func TestCoprocessor_Differential(t *testing.T) {
	cfg := coproctest.Config{Seed: *diffSeed, SeedFlag: "coproc-seed", Requests: *diffRequests}
	datasets := 0
	coproctest.Run(t, cfg, func(t *testing.T, rows []coproctest.Row) coproctest.Target {
		opts := &Options{CoprocessorConcurrency: DefaultCoprocessorConcurrency}
		if datasets%2 == 1 {
			opts.CoprocessorConcurrency = 1
		}
		datasets++
		t.Logf("CoprocessorConcurrency %d", opts.CoprocessorConcurrency)
		s, err := New(mockKVStoreSplit(t, nil, diffSplits), opts)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		var b *kv.Batch
		for i, r := range rows {
			if b == nil {
				b = s.NewBatch()
			}
			b.Set(r.Key, r.Value)
			if b.Len() == 500 || i == len(rows)-1 {
				require.NoError(t, s.Write(t.Context(), b))
				b = nil
			}
		}
		return coproctest.Target{Coprocessor: s.Coprocessor}
	})
}
