package resource

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunawayRule_Validate(t *testing.T) {
	kill := func(r RunawayRule) *RunawayRule { r.Action = RunawayKill; return &r }
	for _, tc := range []struct {
		name string
		rule *RunawayRule
		want []string // one problem each, in order; none = valid
	}{
		{"nil", nil, nil},
		{"exec only", kill(RunawayRule{ExecElapsed: 10 * time.Millisecond}), nil},
		{"rows only", &RunawayRule{RowsScanned: 1000, Action: RunawayDryRun}, nil},
		{"both and a watch", &RunawayRule{ExecElapsed: time.Second, RowsScanned: 1, Action: RunawayCooldown, Watch: time.Minute}, nil},
		{"least values", kill(RunawayRule{ExecElapsed: MinRunawayExecElapsed, RowsScanned: 1, Watch: MinRunawayWatch}), nil},
		{"most values", kill(RunawayRule{ExecElapsed: MaxRunawayExecElapsed, RowsScanned: MaxRunawayRows, Watch: MaxRunawayWatch}), nil},

		{"negative exec", kill(RunawayRule{ExecElapsed: -time.Millisecond}), []string{"ExecElapsed -1ms is negative"}},
		{"exec in ns by mistake", kill(RunawayRule{ExecElapsed: 10}), []string{"ExecElapsed 10ns is neither 0"}},
		{"exec past a day", kill(RunawayRule{ExecElapsed: 25 * time.Hour}), []string{"ExecElapsed 25h0m0s is neither 0"}},
		{"negative rows", kill(RunawayRule{ExecElapsed: time.Second, RowsScanned: -1}), []string{"RowsScanned -1 is negative"}},
		{"absurd rows", kill(RunawayRule{RowsScanned: 1 << 62}), []string{"RowsScanned 4611686018427387904 is more than 1099511627776"}},
		{"no limit", kill(RunawayRule{Watch: time.Minute}), []string{"neither ExecElapsed nor RowsScanned"}},
		{"unknown action", &RunawayRule{RowsScanned: 5, Action: "explode"}, []string{`Action "explode" is not dryrun, cooldown or kill`}},
		{"empty action", &RunawayRule{RowsScanned: 5}, []string{`Action "" is not`}},
		{"upper-case action", &RunawayRule{RowsScanned: 5, Action: "KILL"}, []string{`Action "KILL" is not`}},
		{"negative watch", kill(RunawayRule{RowsScanned: 5, Watch: -time.Second}), []string{"Watch -1s is negative"}},
		{"watch in ns by mistake", kill(RunawayRule{RowsScanned: 5, Watch: 60}), []string{"Watch 60ns is neither 0"}},
		{"watch past a day", kill(RunawayRule{RowsScanned: 5, Watch: 48 * time.Hour}), []string{"Watch 48h0m0s is neither 0"}},
		{"every problem at once", &RunawayRule{ExecElapsed: -1, RowsScanned: -1, Action: "x", Watch: -1},
			[]string{"ExecElapsed -1ns is negative", "RowsScanned -1 is negative", "Action \"x\"", "Watch -1ns is negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rule.Validate()
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidRunaway)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tc.want), "one line per problem: %v", err)
			for i, w := range tc.want {
				assert.True(t, strings.HasPrefix(lines[i], "resource: invalid runaway rule: "), lines[i])
				assert.Contains(t, lines[i], w)
			}
		})
	}
}

func TestParseRunawayAction(t *testing.T) {
	for in, want := range map[string]RunawayAction{"dryrun": RunawayDryRun, "COOLDOWN": RunawayCooldown, " Kill ": RunawayKill} {
		got, err := ParseRunawayAction(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"", "dry-run", "stop"} {
		_, err := ParseRunawayAction(in)
		assert.ErrorIs(t, err, ErrInvalidRunaway, in)
	}
}

func TestRunawayRule_String(t *testing.T) {
	assert.Equal(t, "none", (*RunawayRule)(nil).String())
	assert.Equal(t, "kill past 10ms or 5000 rows, watch 1m0s",
		(&RunawayRule{ExecElapsed: 10 * time.Millisecond, RowsScanned: 5000, Action: RunawayKill, Watch: time.Minute}).String())
	assert.Equal(t, "dryrun past 1s", (&RunawayRule{ExecElapsed: time.Second, Action: RunawayDryRun}).String())
	assert.Equal(t, "cooldown past 7 rows", (&RunawayRule{RowsScanned: 7, Action: RunawayCooldown}).String())
}

func TestJudge(t *testing.T) {
	ms := time.Millisecond
	exec := &RunawayRule{ExecElapsed: 10 * ms, Action: RunawayKill}
	rows := &RunawayRule{RowsScanned: 100, Action: RunawayKill}
	both := &RunawayRule{ExecElapsed: 10 * ms, RowsScanned: 100, Action: RunawayKill}
	for _, tc := range []struct {
		name string
		rule *RunawayRule
		exec time.Duration
		rows int64
		want bool
	}{
		{"no rule", nil, time.Hour, 1 << 40, false},
		{"exec under", exec, 9 * ms, 1 << 40, false},
		{"exec at the limit is not past it", exec, 10 * ms, 0, false},
		{"exec past", exec, 10*ms + 1, 0, true},
		{"rows under", rows, time.Hour, 99, false},
		{"rows at the limit", rows, 0, 100, false},
		{"rows past", rows, 0, 101, true},
		{"both, neither past", both, 10 * ms, 100, false},
		{"both, exec past", both, 11 * ms, 0, true},
		{"both, rows past", both, 0, 101, true},
		{"both past", both, time.Second, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, judge(tc.rule, tc.exec, tc.rows))
		})
	}
}

func TestSeverer(t *testing.T) {
	order := []RunawayAction{"", RunawayDryRun, RunawayCooldown, RunawayKill}
	for i, a := range order {
		for j, b := range order {
			assert.Equal(t, order[max(i, j)], severer(a, b), "%q, %q", a, b)
		}
	}
}

func TestManager_PutRunaway_Validates(t *testing.T) {
	m := NewManager()
	err := m.Put(GroupConfig{Name: "g", Runaway: &RunawayRule{ExecElapsed: -1, Action: RunawayKill}})
	require.ErrorIs(t, err, ErrInvalidRunaway)
	assert.ErrorContains(t, err, "ExecElapsed")
	_, ok := m.Get("g")
	assert.False(t, ok, "a refused Put creates nothing")

	// A refused Put of an existing group leaves its rule as it was.
	rule := &RunawayRule{RowsScanned: 10, Action: RunawayDryRun}
	require.NoError(t, m.Put(GroupConfig{Name: "g", Runaway: rule}))
	require.Error(t, m.Put(GroupConfig{Name: "g", Runaway: &RunawayRule{RowsScanned: 10, Action: "nuke"}}))
	got, _ := m.Get("g")
	assert.Equal(t, rule, got.Runaway)

	// With other problems, all are reported.
	err = m.Put(GroupConfig{Name: "", Runaway: &RunawayRule{Action: RunawayKill}})
	require.ErrorIs(t, err, ErrInvalidRunaway)
	assert.ErrorIs(t, err, ErrInvalidGroup)
	assert.Len(t, strings.Split(err.Error(), "\n"), 2)
}

// The rule in force is the Manager's own: neither the caller's rule after
// Put nor what Get, List, Config and Stats return can change it.
func TestManager_PutRunaway_Copies(t *testing.T) {
	m := NewManager()
	rule := &RunawayRule{ExecElapsed: time.Second, Action: RunawayCooldown}
	require.NoError(t, m.Put(GroupConfig{Name: "g", Runaway: rule}))
	g := m.Resolve("g")
	inForce := g.Runaway()
	require.NotNil(t, inForce)
	assert.NotSame(t, rule, inForce, "Put keeps a copy")

	rule.Action = RunawayKill
	assert.Equal(t, RunawayCooldown, g.Runaway().Action, "the caller's later change does not leak in")

	got, _ := m.Get("g")
	got.Runaway.Action = RunawayKill
	m.List()[1].Runaway.Action = RunawayKill
	c := g.Config()
	c.Runaway.Action = RunawayKill
	m.Stats()[1].Runaway.Action = RunawayKill
	assert.Equal(t, RunawayCooldown, g.Runaway().Action, "what Get, List, Config and Stats return are copies")
	got, _ = m.Get("g")
	assert.Equal(t, RunawayCooldown, got.Runaway.Action)
}

// Group.Runaway is the rule in force at the moment: a Put that adds,
// changes or removes it, or a Delete (the default group's rule then), is
// seen by the next call on a Group resolved before it.
func TestGroup_RunawayFollowsPutAndDelete(t *testing.T) {
	m := NewManager()
	require.NoError(t, m.Put(GroupConfig{Name: "g"}))
	g := m.Resolve("g")
	assert.Nil(t, g.Runaway())

	r1 := RunawayRule{RowsScanned: 10, Action: RunawayDryRun}
	require.NoError(t, m.Put(GroupConfig{Name: "g", Runaway: &r1}))
	assert.Equal(t, r1, *g.Runaway(), "added")
	r2 := RunawayRule{RowsScanned: 5, Action: RunawayKill}
	require.NoError(t, m.Put(GroupConfig{Name: "g", Runaway: &r2}))
	assert.Equal(t, r2, *g.Runaway(), "changed")
	require.NoError(t, m.Put(GroupConfig{Name: "g"}))
	assert.Nil(t, g.Runaway(), "removed")

	require.NoError(t, m.Put(GroupConfig{Name: "g", Runaway: &r2}))
	def := RunawayRule{ExecElapsed: time.Second, Action: RunawayCooldown}
	require.NoError(t, m.Put(GroupConfig{Name: DefaultGroup, Burstable: true, Runaway: &def}))
	require.NoError(t, m.Delete("g"))
	assert.Equal(t, def, *g.Runaway(), "a deleted group's reads run by default's rule")
}

func TestGroupConfig_RunawayJSON(t *testing.T) {
	cfg := GroupConfig{Name: "g", RUPerSec: 5, Priority: PriorityLow, Runaway: &RunawayRule{
		ExecElapsed: 10 * time.Millisecond, RowsScanned: 5000, Action: RunawayKill, Watch: time.Minute,
	}}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"g","ru_per_sec":5,"burstable":false,"priority":"low",
		"runaway":{"exec_elapsed_ns":10000000,"rows_scanned":5000,"action":"kill","watch_ns":60000000000}}`, string(b))
	var back GroupConfig
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, cfg, back)

	b, err = json.Marshal(GroupConfig{Name: "g"})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "runaway", "no rule, no field")

	m := NewManager()
	require.NoError(t, m.Put(cfg))
	b, err = json.Marshal(m.Stats())
	require.NoError(t, err)
	assert.Contains(t, string(b), `"runaway":{"exec_elapsed_ns":10000000,`)
}

// A rule reads from the wire names and from the Go names (a
// json:",omitempty" tag's, as API.md spells GroupConfig.Runaway); a field
// given both ways, or an unknown one, is refused.
func TestRunawayRule_UnmarshalBothNames(t *testing.T) {
	want := RunawayRule{ExecElapsed: 10 * time.Millisecond, RowsScanned: 500, Action: RunawayKill, Watch: time.Minute}
	for _, in := range []string{
		`{"exec_elapsed_ns":10000000,"rows_scanned":500,"action":"kill","watch_ns":60000000000}`,
		`{"ExecElapsed":10000000,"RowsScanned":500,"Action":"kill","Watch":60000000000}`,
	} {
		var r RunawayRule
		require.NoError(t, json.Unmarshal([]byte(in), &r), in)
		assert.Equal(t, want, r, in)
	}
	var cfg GroupConfig
	require.NoError(t, json.Unmarshal([]byte(`{"name":"g","Runaway":{"ExecElapsed":10000000,"Action":"cooldown"}}`), &cfg))
	require.NotNil(t, cfg.Runaway)
	assert.Equal(t, RunawayRule{ExecElapsed: 10 * time.Millisecond, Action: RunawayCooldown}, *cfg.Runaway)

	for _, bad := range []string{
		`{"exec_elapsed_ns":1000000,"ExecElapsed":1000000,"action":"kill"}`,
		`{"exec_elapsed_ms":10,"action":"kill"}`,
	} {
		var r RunawayRule
		assert.ErrorIs(t, json.Unmarshal([]byte(bad), &r), ErrInvalidRunaway, bad)
	}
}
