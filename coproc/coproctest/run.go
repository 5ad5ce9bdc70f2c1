package coproctest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coopkv/coopkv/coproc"
)

// Target is the coprocessor of a store under test.
type Target struct {
	// Coprocessor answers a request (kv.DB's Coprocessor, a kv.Store's).
	Coprocessor func(ctx context.Context, req *coproc.Request) (*coproc.Response, error)
	// Raw, when not nil, answers a request encoded with coproc.Encode
	// with a response for coproc.DecodeResponse (kv.DB's
	// CoprocessorRaw): Run then sends a quarter of the requests through
	// it and the codec.
	Raw func(ctx context.Context, req []byte) ([]byte, error)
}

// Config sizes a Run.
type Config struct {
	// Seed seeds every dataset and request; 0 = from the clock. Run logs
	// it: a failure replays with the same seed.
	Seed uint64
	// SeedFlag, when not "", is the test's flag that sets Seed, for the
	// log to say how to replay ("coproc-seed": "-coproc-seed=N").
	SeedFlag string
	// Requests is how many requests are checked in all; 0 =
	// DefaultRequests.
	Requests int
	// PerDataset is how many requests each dataset answers before the
	// next is drawn; 0 = DefaultPerDataset.
	PerDataset int
}

// Defaults of a Config: CI-sized.
const (
	DefaultRequests   = 2400
	DefaultPerDataset = 400
)

// Run checks a coprocessor against Reference: for every PerDataset
// requests it draws a dataset (NewDataset), has open load its rows into
// a fresh, empty store (in a subtest, "dataset0", "dataset1", …), and
// checks that many random requests (Dataset.Request) against the target
// open returns (Check). A dataset stops at its first failure. The store
// is the caller's to close, with t.Cleanup.
func Run(t *testing.T, cfg Config, open func(t *testing.T, rows []Row) Target) {
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	if cfg.SeedFlag != "" {
		t.Logf("seed %d (replay with -%s=%d)", seed, cfg.SeedFlag, seed)
	} else {
		t.Logf("seed %d", seed)
	}
	total := cfg.Requests
	if total <= 0 {
		total = DefaultRequests
	}
	per := cfg.PerDataset
	if per <= 0 {
		per = DefaultPerDataset
	}
	for ds := 0; total > 0; ds++ {
		n := min(total, per)
		total -= n
		t.Run(fmt.Sprintf("dataset%d", ds), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(ds)))
			d, err := NewDataset(rng)
			if err != nil {
				t.Fatal(err)
			}
			target := open(t, d.Rows)
			var st Stats
			for i := range n {
				req := d.Request(rng)
				raw := rng.IntN(4) == 0 && target.Raw != nil
				what := fmt.Sprintf("seed %d dataset %d request %d (raw %v)", seed, ds, i, raw)
				if !Check(t, what, target.run(t, raw, &st), req, d.Rows, &st) {
					return // one failure says enough; the rest would repeat it
				}
			}
			t.Logf("%d rows; %d requests: %v", len(d.Rows), n, st)
		})
	}
}

// run is the function Check sends requests through: Coprocessor, or Raw
// and the codec.
func (tg Target) run(t *testing.T, raw bool, st *Stats) func(*coproc.Request) (*coproc.Response, error) {
	ctx := t.Context()
	if !raw {
		return func(r *coproc.Request) (*coproc.Response, error) { return tg.Coprocessor(ctx, r) }
	}
	st.Raw++
	return func(r *coproc.Request) (*coproc.Response, error) {
		b, err := coproc.Encode(r)
		if err != nil {
			return nil, fmt.Errorf("coproctest: encoding the request: %w", err)
		}
		out, err := tg.Raw(ctx, b)
		if err != nil {
			return nil, err
		}
		resp, err := coproc.DecodeResponse(out)
		if err != nil {
			return nil, fmt.Errorf("coproctest: decoding the response: %w", err)
		}
		return resp, nil
	}
}
