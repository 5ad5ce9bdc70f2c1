package tikv

import (
	"fmt"
	"strings"

	"github.com/pingcap/failpoint"
	"github.com/pingcap/kvproto/pkg/metapb"
)

// MockLiveness makes client-go's liveness probes of stores — those of its
// in-process mock cluster (testutils.MockCluster.GetAllStores) — answer as
// each store is: reachable while it is up, unreachable while it is
// stopped. client-go probes a store it could not reach through TiKV's
// status API, which the mock does not serve: without this every probe
// fails, and a store once found unreachable stays so for good, where a
// restarted TiKV answers. Call it after each StopStore and StartStore;
// client-go's failpoints must have been enabled (client-go's
// tikv.EnableFailpoints) before the client-go store was made. For tests
// and kvbench-tikv --faults.
func MockLiveness(stores []*metapb.Store) error {
	var b strings.Builder
	for _, st := range stores {
		state := "reachable"
		if st.GetState() != metapb.StoreState_Up {
			state = "unreachable"
		}
		fmt.Fprintf(&b, "%s:%s ", st.GetAddress(), state)
	}
	b.WriteString("-:unknown") // the list form needs two entries at least
	return failpoint.Enable("tikvclient/injectLiveness", fmt.Sprintf("return(%q)", b.String()))
}
