package tikv

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/log"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/tikvrpc"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

func TestRequests_CarryTheirContextsGroupAndPriority(t *testing.T) {
	rec := &recorder{}
	s, err := New(mockKVStore(t, rec), nil)
	require.NoError(t, err)
	defer s.Close()
	ctx := kv.WithPriority(kv.WithResourceGroup(context.Background(), "tenant-a"), resource.PriorityHigh)

	row, err := coproc.EncodeRow(map[string]any{"v": 1})
	require.NoError(t, err)
	b := s.NewBatch()
	for i := range 40 {
		b.Set(fmt.Appendf(nil, "k%02d", i), row) // two regions
	}
	require.NoError(t, s.Write(ctx, b))
	_, err = s.Get(ctx, []byte("k01"))
	require.NoError(t, err)
	_, err = s.MultiGet(ctx, [][]byte{[]byte("k01"), []byte("k30")})
	require.NoError(t, err)
	it := s.Scan(ctx, nil, nil, &kv.ScanOptions{Reverse: true})
	for range it.All() {
	}
	require.NoError(t, it.Err())
	snap, err := s.NewSnapshot(ctx)
	require.NoError(t, err)
	_, err = snap.Get(ctx, []byte("k02"))
	require.NoError(t, err)
	require.NoError(t, snap.Close())
	_, err = s.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count", As: "n"}}})
	require.NoError(t, err)

	kinds := map[tikvrpc.CmdType]int{}
	for _, r := range rec.take() {
		kinds[r.Type]++
		rc := r.GetResourceControlContext()
		require.NotNil(t, rc, "%s carries resource control", r.Type)
		assert.Equal(t, "tenant-a", rc.GetResourceGroupName(), "%s names the group", r.Type)
		assert.EqualValues(t, 16, rc.GetOverridePriority(), "%s carries the priority (HIGH 16)", r.Type)
		assert.Equal(t, kvrpcpb.CommandPri_High, r.Priority, "%s: TiKV's command priority", r.Type)
		assert.Contains(t, r.GetRequestSource(), RequestSource, "%s names the source", r.Type)
	}
	for _, k := range []tikvrpc.CmdType{tikvrpc.CmdPrewrite, tikvrpc.CmdCommit, tikvrpc.CmdGet, tikvrpc.CmdBatchGet, tikvrpc.CmdScan} {
		assert.Positive(t, kinds[k], "%s was sent and checked", k)
	}

	// No priority named: the group's own (no override), at normal command priority.
	_, err = s.Get(kv.WithResourceGroup(context.Background(), "tenant-b"), []byte("k01"))
	require.NoError(t, err)
	for _, r := range rec.take() {
		assert.Equal(t, "tenant-b", r.GetResourceControlContext().GetResourceGroupName())
		assert.Zero(t, r.GetResourceControlContext().GetOverridePriority())
		assert.Equal(t, kvrpcpb.CommandPri_Normal, r.Priority)
	}
	_, err = s.Get(context.Background(), []byte("k01"))
	require.NoError(t, err)
	for _, r := range rec.take() {
		assert.Equal(t, resource.DefaultGroup, r.GetResourceControlContext().GetResourceGroupName(), "none named: default")
	}

	_, err = s.Get(kv.WithPriority(context.Background(), 5), []byte("k01"))
	assert.ErrorContains(t, err, "invalid priority 5")
	assert.Empty(t, rec.take(), "an invalid priority sends nothing")
}

func TestLogger_ClientGoWarningsGoToOptionsLogger(t *testing.T) {
	var buf strings.Builder
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := openMock(t, &Options{Logger: logger})
	_ = s
	log.L().Info("client-go chatter")
	log.L().Warn("client-go warning")
	assert.Contains(t, buf.String(), "client-go warning")
	assert.Contains(t, buf.String(), "source=client-go")
	assert.NotContains(t, buf.String(), "chatter", "INFO is dropped by default")
}
