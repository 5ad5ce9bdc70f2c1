package kv

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The hot set: which tables the store had read into its block cache, saved
// in its directory at Close and every few minutes while open, and read
// back in the background after Open (as InnoDB's buffer pool dump and
// load), so a restarted store warms the tables it had warm first, not
// after a million misses. A table is named by its file number and size; a
// table gone since, or of another size, is skipped, so a file from an
// older state of the store, or from another store, warms nothing wrong.
//
// The file: "coopkv-hotset\n", a version (uvarint), the count of tables,
// each table's file number, size and bytes read (uvarints), then (from
// version 2) the count of the row cache's keys and each key (its length, a
// uvarint, and its bytes), then a CRC-32C (Castagnoli) of all before it,
// little-endian. Anything else is corrupt, and ignored with a log line.
// Version 1, without keys, still reads.

const (
	hotSetName    = "COOPKV-HOTSET"
	hotSetMagic   = "coopkv-hotset\n"
	hotSetVersion = 2
	// maxHotTables bounds the tables a file lists, and maxHotKeyBytes the
	// bytes of the keys, and so its size.
	maxHotTables   = 1 << 20
	maxHotKeyBytes = 16 << 20
)

// errHotSetCorrupt says a hot-set file could not be read as one.
var errHotSetCorrupt = errors.New("kv: hot set: corrupt")

// hotSet is what a store had warm: the tables it read into the block
// cache, and the keys its row cache held.
type hotSet struct {
	tables []hotTable
	keys   [][]byte
}

// hotTable is a table of the hot set: its file number, its size, and the
// bytes read from it into the block cache while the store was open.
type hotTable struct {
	fileNum, size, read uint64
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// encodeHotSet is the file's bytes for hs.
func encodeHotSet(hs hotSet) []byte {
	b := []byte(hotSetMagic)
	b = binary.AppendUvarint(b, hotSetVersion)
	b = binary.AppendUvarint(b, uint64(len(hs.tables)))
	for _, t := range hs.tables {
		b = binary.AppendUvarint(b, t.fileNum)
		b = binary.AppendUvarint(b, t.size)
		b = binary.AppendUvarint(b, t.read)
	}
	b = binary.AppendUvarint(b, uint64(len(hs.keys)))
	for _, k := range hs.keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// decodeHotSet reads a file's bytes; every failure wraps errHotSetCorrupt.
func decodeHotSet(b []byte) (hotSet, error) {
	corrupt := func(what string) error { return fmt.Errorf("%w: %s", errHotSetCorrupt, what) }
	if len(b) < len(hotSetMagic)+4 || string(b[:len(hotSetMagic)]) != hotSetMagic {
		return hotSet{}, corrupt("not a hot-set file")
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return hotSet{}, corrupt("checksum mismatch")
	}
	r := body[len(hotSetMagic):]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			return 0, false
		}
		r = r[n:]
		return v, true
	}
	v, ok := next()
	if !ok || v < 1 || v > hotSetVersion {
		return hotSet{}, corrupt(fmt.Sprintf("version %d, want 1 to %d", v, hotSetVersion))
	}
	n, ok := next()
	if !ok || n > maxHotTables {
		return hotSet{}, corrupt("table count")
	}
	var hs hotSet
	hs.tables = make([]hotTable, 0, n)
	for range n {
		var t hotTable
		var ok1, ok2, ok3 bool
		t.fileNum, ok1 = next()
		t.size, ok2 = next()
		t.read, ok3 = next()
		if !ok1 || !ok2 || !ok3 {
			return hotSet{}, corrupt("truncated")
		}
		hs.tables = append(hs.tables, t)
	}
	if v >= 2 {
		n, ok := next()
		if !ok || n > uint64(len(r)) { // each key takes at least its length's byte
			return hotSet{}, corrupt("key count")
		}
		hs.keys = make([][]byte, 0, n)
		for range n {
			l, ok := next()
			if !ok || l == 0 || l > uint64(len(r)) {
				return hotSet{}, corrupt("truncated key")
			}
			hs.keys = append(hs.keys, slices.Clone(r[:l]))
			r = r[l:]
		}
	}
	if len(r) != 0 {
		return hotSet{}, corrupt("trailing bytes")
	}
	return hs, nil
}

// hottestFirst orders tables by the share of each that was read, then by
// the bytes read: the tables most of whose blocks were cached go first.
func hottestFirst(tables []hotTable) {
	share := func(t hotTable) float64 { return float64(t.read) / float64(max(t.size, 1)) }
	slices.SortStableFunc(tables, func(a, b hotTable) int {
		if c := cmp.Compare(share(b), share(a)); c != 0 {
			return c
		}
		return cmp.Compare(b.read, a.read)
	})
}

// writeHotSet writes the hot set into dir on fs, whole or not at all: a
// temporary file, synced, renamed over the old one, the directory synced.
func writeHotSet(fs vfs.FS, dir string, hs hotSet) error {
	path := fs.PathJoin(dir, hotSetName)
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(encodeHotSet(hs))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// readHotSet reads the hot set in dir on fs; a missing file is an error
// that satisfies oserror.IsNotExist.
func readHotSet(fs vfs.FS, dir string) (hotSet, error) {
	f, err := fs.Open(fs.PathJoin(dir, hotSetName))
	if err != nil {
		return hotSet{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return hotSet{}, err
	}
	return decodeHotSet(b)
}
