package coproctest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/coopkv/coopkv/coproc"
)

// Key is the key of row i of a dataset: "key" and i in eight digits, so
// that keys sort as their numbers do and a key less its last digit is
// before ten of them.
func Key(i int) []byte { return fmt.Appendf(nil, "key%08d", i) }

// Row is a row as a store holds it: its key, its stored value (a msgpack
// map, coproc.EncodeRow's) and that value decoded (coproc.DecodeRow's:
// the types a coprocessor sees).
type Row struct {
	Key   []byte
	Value []byte
	Cols  map[string]any
}

// Dataset is random rows, ascending by key.
type Dataset struct {
	Rows []Row
	// span: the keys are Key(i) for some i in [0, span), so that a range
	// bound may fall on a missing key.
	span int
}

// Columns are the columns of a dataset's rows. "b" mixes every kind; "g"
// mixes numbers of every width, large ones included, so that its sums
// overflow or turn float.
var Columns = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

// NewDataset draws 200 to 2,000 rows from rng, at keys spread over up to
// twice as many places; each column is missing from a row or null in it
// one time in twelve.
func NewDataset(rng *rand.Rand) (*Dataset, error) {
	n := 200 + rng.IntN(1800)
	span := n + rng.IntN(n+1)
	idx := rng.Perm(span)[:n]
	slices.Sort(idx)
	d := &Dataset{span: span, Rows: make([]Row, 0, n)}
	for _, j := range idx {
		row := map[string]any{}
		for _, c := range Columns {
			switch rng.IntN(12) {
			case 0:
				continue // missing
			case 1:
				row[c] = nil
				continue
			}
			row[c] = value(rng, c)
		}
		enc, err := coproc.EncodeRow(row)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", j, err)
		}
		cols, err := coproc.DecodeRow(enc)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", j, err)
		}
		d.Rows = append(d.Rows, Row{Key: Key(j), Value: enc, Cols: cols})
	}
	return d, nil
}

var (
	someStrings = []string{"", "a", "ab", "abc", "b", "ba", "r1", "x"}
	someBytes   = []string{"a", "ab", "b", "\x00", "\x00a", "\xff", "r1"}
)

// value is a random value of column c.
func value(rng *rand.Rand, c string) any {
	switch c {
	case "a":
		return rng.IntN(41) - 20
	case "b":
		return scalar(rng)
	case "c":
		if rng.IntN(10) == 0 {
			return []byte(fmt.Sprintf("r%d", rng.IntN(7))) // same group as the string
		}
		return fmt.Sprintf("r%d", rng.IntN(7))
	case "d":
		if rng.IntN(4) == 0 {
			return float64(rng.IntN(21) - 10) // integral: groups with ints
		}
		return math.Round(rng.NormFloat64()*10000) / 100
	case "e":
		b := make([]byte, 1+rng.IntN(3))
		for i := range b {
			b[i] = "ab\x00\xff"[rng.IntN(4)]
		}
		return b
	case "f":
		return rng.IntN(2) == 0
	case "g":
		switch rng.IntN(40) {
		case 0:
			return uint64(math.MaxInt64) + 1 + rng.Uint64N(1000)
		case 1:
			return int64(math.MaxInt64) - rng.Int64N(1000)
		case 2:
			return int64(math.MinInt64) + rng.Int64N(1000)
		case 3, 4:
			return rng.Float64()*2000 - 1000
		}
		return rng.Int64N(2_000_001) - 1_000_000
	case "h":
		return rng.IntN(2001) - 1000
	}
	panic("unknown column " + c)
}

// scalar is a random value of any kind, small enough to collide with
// other rows' values and with constants.
func scalar(rng *rand.Rand) any {
	switch rng.IntN(10) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2, 3:
		return int64(rng.IntN(11) - 5)
	case 4:
		return float64(rng.IntN(11)-5) / 2
	case 5:
		return someStrings[rng.IntN(len(someStrings))]
	case 6:
		return []byte(someBytes[rng.IntN(len(someBytes))])
	case 7:
		if rng.IntN(4) == 0 {
			return uint64(math.MaxInt64) + 1 + rng.Uint64N(3)
		}
		return rng.IntN(5) // a Go int: normalised
	case 8:
		return uint8(rng.IntN(6)) // a narrow unsigned: normalised
	}
	return someStrings[rng.IntN(len(someStrings))]
}
