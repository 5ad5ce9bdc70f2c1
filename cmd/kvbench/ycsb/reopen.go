package main

import (
	"fmt"
	"io"
	"time"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// The restart mode (--reopen, issue 41): after the load and before each
// workload the runner closes the store and opens it again on the same
// directory, so that each workload starts as a restarted service would,
// with the store's in-process caches empty. The OS page cache is left as
// it was, as a service restarted on the same machine finds it.
//
// Every binding opens what its directory holds unless go-ycsb's dropdata
// property asks it to remove it first: the runner's own (coopkvdb,
// badger4db, bboltdb, pebbledb) through binding.Base.OpenDir, go-ycsb's
// badger and bolt in their creators. dropdata is off by default, and
// config.validate refuses it with --reopen.

// reopenStats is the time a reopen before a workload took.
type reopenStats struct {
	CloseSec float64 `json:"close_sec"` // the old store's Close
	OpenSec  float64 `json:"open_sec"`  // the new one's open, until it takes a call
}

// Sec is the whole reopen.
func (r *reopenStats) Sec() float64 { return r.CloseSec + r.OpenSec }

// reopenStore closes db, store s opened with the properties p, and opens
// s again with the same properties, on the directory they name. When the
// close fails the store is not opened again; either way a nil DB means
// none is open.
func reopenStore(s store, p *properties.Properties, db ycsb.DB) (ycsb.DB, *reopenStats, error) {
	var r reopenStats
	t0 := time.Now()
	if err := db.Close(); err != nil {
		return nil, nil, fmt.Errorf("reopen: close: %w", err)
	}
	t1 := time.Now()
	db, err := openStore(s, p)
	if err != nil {
		return nil, nil, fmt.Errorf("reopen: %w", err)
	}
	r.CloseSec, r.OpenSec = t1.Sub(t0).Seconds(), time.Since(t1).Seconds()
	return db, &r, nil
}

// reopenProgress reports a reopen on errOut.
func reopenProgress(errOut io.Writer, store, w string, r *reopenStats) {
	fmt.Fprintf(errOut, "[%s] reopened before %s in %s ms (close %s ms, open %s ms)\n",
		store, w, msCell(r.Sec()), msCell(r.CloseSec), msCell(r.OpenSec))
}

// dropsData says whether the properties given with -p ask the bindings to
// remove their directory when they open (go-ycsb's dropdata), as go-ycsb's
// bindings read it.
func dropsData(props []string) bool {
	m := map[string]string{}
	for _, p := range props {
		if name, value, ok := cutProp(p); ok {
			m[name] = value
		}
	}
	return properties.LoadMap(m).GetBool(prop.DropData, prop.DropDataDefault)
}
