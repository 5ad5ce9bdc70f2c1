package coproctest_test

import (
	"fmt"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/coproc/coproctest"
)

// Reference answers a request over rows as the documentation says a
// coprocessor must.
func ExampleReference() {
	var rows []coproctest.Row
	for i, n := range []int{3, 1, 2} {
		enc, err := coproc.EncodeRow(map[string]any{"n": n})
		if err != nil {
			panic(err)
		}
		cols, err := coproc.DecodeRow(enc)
		if err != nil {
			panic(err)
		}
		rows = append(rows, coproctest.Row{Key: coproctest.Key(i), Value: enc, Cols: cols})
	}
	req := &coproc.Request{
		Ranges:  []coproc.KeyRange{{Start: coproctest.Key(1)}},
		OrderBy: []coproc.Order{{Col: "n"}},
		Limit:   1,
	}
	ans := coproctest.Reference(req, rows)
	fmt.Println(coproctest.RowString(ans.Rows[0]), "of", ans.Scanned, "rows")
	// Output: {_key:b"key00000001" n:int64(1)} of 2 rows
}
