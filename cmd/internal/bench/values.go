package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/coopkv/coopkv/coproc"
)

// The rows of the cop workloads' dataset: {"region": "r0" … "r15",
// "amount": 0 … 9,999, "ts": a millisecond in 2026, "pad": random bytes},
// each drawn uniformly.
const (
	rowRegions   = 16
	rowMaxAmount = 10_000                 // amounts are below it
	rowTSBase    = int64(1_767_225_600e3) // 2026-01-01T00:00:00Z, in Unix milliseconds
	rowTSSpan    = int64(365 * 24 * 3600e3)
)

// regionNames are the rows' regions, so that a row does not format one.
var regionNames = func() []string {
	names := make([]string, rowRegions)
	for i := range names {
		names[i] = fmt.Sprintf("r%d", i)
	}
	return names
}()

// valueMaker makes the values the load writes, of --value-size bytes
// each. They are random
// bytes, unless rows is set: then each is a coprocessor row
// ([coproc.EncodeRow]) whose random pad fills it out to the size, so that
// --value-size still holds and the bytes stay mostly incompressible. (A
// row's other columns take ~40 bytes: a smaller --value-size gets rows of
// those ~40.) The load writes rows only when a workload of the run reads
// them (cop, cop-scan), so the other workloads' figures stay those of
// random values; a run that mixes them measures them all on rows.
//
// A valueMaker is one goroutine's.
type valueMaker struct {
	rows bool
	size int
	buf  []byte // the random bytes of a value or of a row's pad
}

func newValueMaker(rows bool, size int) *valueMaker {
	return &valueMaker{rows: rows, size: size, buf: make([]byte, size)}
}

// next returns a fresh value drawn from r, valid until the next call.
func (m *valueMaker) next(r *rand.Rand) ([]byte, error) {
	if !m.rows {
		fillValue(r, m.buf)
		return m.buf, nil
	}
	row := map[string]any{
		"region": regionNames[r.IntN(rowRegions)],
		"amount": r.Int64N(rowMaxAmount),
		"ts":     rowTSBase + r.Int64N(rowTSSpan),
		"pad":    m.buf[:0],
	}
	// Encode the row without its pad to learn the pad's room, then with
	// it; the pad's length prefix grows by a byte past 255 bytes, so a pad
	// that overshoots is trimmed by its excess.
	b, err := coproc.EncodeRow(row)
	if err != nil {
		return nil, err
	}
	pad := max(m.size-len(b), 0)
	for {
		fillValue(r, m.buf[:pad])
		row["pad"] = m.buf[:pad]
		if b, err = coproc.EncodeRow(row); err != nil || len(b) <= m.size || pad == 0 {
			return b, err
		}
		pad = max(pad-(len(b)-m.size), 0)
	}
}
