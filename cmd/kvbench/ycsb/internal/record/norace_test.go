//go:build !race

package record

// raceEnabled says the tests run under the race detector (see race_test.go).
const raceEnabled = false
