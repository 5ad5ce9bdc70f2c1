package diskfs

import (
	"strconv"
	"strings"
)

// What a Pebble file's name says, in one place: the policy's kinds
// (FS.kindOf) and the store's watch on table reads both read names here.

// IsTable reports whether name is a Pebble table or blob file: the files
// Get, Scan and the coprocessor read.
func IsTable(name string) bool {
	n := len(name)
	return n > 4 && name[n-4:] == ".sst" || n > 5 && name[n-5:] == ".blob"
}

// FileNum is the file number of a table's or a WAL's path
// ("dir/000123.sst": 123), false when the name has none.
func FileNum(name string) (uint64, bool) {
	base := name[strings.LastIndexAny(name, `/\`)+1:]
	dot := strings.IndexByte(base, '.')
	if dot <= 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(base[:dot], 10, 64)
	return n, err == nil
}

// isWAL and isManifest are the kinds the policy treats apart, by base name.
func isWAL(base string) bool      { return strings.HasSuffix(base, ".log") }
func isManifest(base string) bool { return strings.HasPrefix(base, "MANIFEST-") }
