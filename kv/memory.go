package kv

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// The block cache's default is a share of the memory the process may use,
// as TiKV (45% of the machine) and CockroachDB (25% recommended) size
// theirs. An embedded store shares its process with the program around it,
// so it takes the smaller, CockroachDB's quarter, and never more than
// maxDefaultCacheSize: past that, a program should say what it wants.
// The cache is a bound, not an allocation: Pebble fills it only with blocks
// it has read, so a small store on a big machine stays small.
const (
	cacheShare          = 4 // the default block cache is 1/cacheShare of memory
	minDefaultCacheSize = 64 << 20
	maxDefaultCacheSize = 8 << 30
	// fallbackCacheSize is the default when the process's memory cannot be
	// read (not Linux, no /proc): what coopkv had before it sized by memory.
	fallbackCacheSize = 64 << 20
)

// defaultCacheSize is the block cache's default for a process that may use
// limit bytes (0 = unknown).
func defaultCacheSize(limit int64) int64 {
	if limit <= 0 {
		return fallbackCacheSize
	}
	return min(max(limit/cacheShare, minDefaultCacheSize), maxDefaultCacheSize)
}

// memoryLimit is the memory the process may use: the tightest cgroup limit
// on it (v2 memory.max, v1 memory.limit_in_bytes, along its cgroup's path to
// the root) where one is set, else physical memory; 0 when neither can be
// read. root is the filesystem's root (os.DirFS("/")).
func memoryLimit(root fs.FS, physical int64) int64 {
	limit := physical
	if l := cgroupLimit(root); l > 0 && (limit <= 0 || l < limit) {
		limit = l
	}
	return limit
}

// noLimit is where cgroup "limits" stop meaning anything: v1 writes
// 2^63-4096 for none, v2 writes "max".
const noLimit = 1 << 62

// cgroupLimit is the tightest memory limit of the process's cgroup and its
// ancestors, or 0.
func cgroupLimit(root fs.FS) int64 {
	data, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return 0
	}
	var best int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			best = tighter(best, walkLimit(root, "sys/fs/cgroup", parts[2], "memory.max"))
		case hasController(parts[1], "memory"): // v1
			best = tighter(best, walkLimit(root, "sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"))
		}
	}
	return best
}

// tighter is the tighter of limits best and l, where 0 is none and values
// at or past noLimit mean none too.
func tighter(best, l int64) int64 {
	if l > 0 && l < noLimit && (best == 0 || l < best) {
		return l
	}
	return best
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// walkLimit reads file in the cgroup dir at cg under mount, and in each of
// its ancestors up to the mount, and returns the smallest limit found.
func walkLimit(root fs.FS, mount, cg, file string) int64 {
	var best int64
	for dir := path.Clean("/" + cg); ; dir = path.Dir(dir) {
		data, err := fs.ReadFile(root, strings.TrimSuffix(mount+dir, "/")+"/"+file)
		if err == nil {
			s := strings.TrimSpace(string(data))
			if l, err := strconv.ParseInt(s, 10, 64); err == nil {
				best = tighter(best, l)
			}
		}
		if dir == "/" {
			return best
		}
	}
}
