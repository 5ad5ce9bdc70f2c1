package bench

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usageErr marks the errors Command's usage wrapped.
type usageErr struct{ error }

// commandUnder returns a root "bin" with w's Command under it, and where
// the workload its run was given is recorded.
func commandUnder(w Workload) (*cobra.Command, *Workload) {
	var ran Workload
	root := &cobra.Command{Use: "bin", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(Command(w,
		func(_ *cobra.Command, w Workload) error { ran = w; return nil },
		func(err error) error { return usageErr{err} }))
	return root, &ran
}

func TestCommand_RunsItsWorkloadWithItsFlags(t *testing.T) {
	w := lookup(t, "scan")
	root, ran := commandUnder(w)
	root.SetArgs([]string{"scan", "--scan-len", "7"})
	require.NoError(t, root.Execute())
	assert.Same(t, w, *ran, "run is given the workload the command was built from")
	sub, _, err := root.Find([]string{"scan"})
	require.NoError(t, err)
	assert.Equal(t, w.Short(), sub.Short)
	assert.Equal(t, w.Long(), sub.Long)
	assert.Equal(t, "7", sub.Flags().Lookup("scan-len").Value.String(), "the workload's own flag, parsed")
}

func TestCommand_UsageErrorsAreWrapped(t *testing.T) {
	for name, args := range map[string][]string{
		"an argument":                {"scan", "extra"},
		"a bad flag":                 {"scan", "--scan-len", "many"},
		"a flag of another workload": {"scan", "--scanners", "2"},
	} {
		t.Run(name, func(t *testing.T) {
			root, ran := commandUnder(lookup(t, "scan"))
			root.SetArgs(args)
			err := root.Execute()
			require.Error(t, err)
			assert.True(t, errors.As(err, new(usageErr)), "usage wraps %v", err)
			assert.Nil(t, *ran, "nothing ran")
		})
	}
	root, _ := commandUnder(lookup(t, "get"))
	root.SetArgs([]string{"get", "extra"})
	assert.EqualError(t, root.Execute(), `unexpected argument "extra" (bin get takes only flags)`, "the root's name and the workload's")
}

// TestUsageError_OneLine: every problem at once, joined, is one line, as a
// binary prints it after its name, and each problem stays reachable.
func TestUsageError_OneLine(t *testing.T) {
	errKeys := errors.New("--keys must be at least 1, not 0")
	cfg := &Config{Keys: 1, ValueSize: 1, Duration: 1, PlotPath: "out.pdf"}
	err := error(UsageError{errors.Join(errKeys, cfg.Validate(), (&clientsFlag{0}).validate(1, ""))})
	assert.EqualError(t, err, "--keys must be at least 1, not 0; --plot out.pdf: the file must end in .png or .svg; "+
		"--clients must be at least 1, not 0")
	assert.ErrorIs(t, err, errKeys)
	assert.Equal(t, 2, ExitStatus(err))
	assert.Equal(t, 1, ExitStatus(errors.Join(errKeys)), "not a usage error")
}
