package cluster

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The executable cache is bounded: a node keeps at most MaxCache bytes of
// executables (DefaultMaxCache unless set), evicting the least recently
// used first. An executable counts as used while a lease runs workers from
// it, and its file's modification time records its last use (so the order
// survives a restart of the node). An executable in use is never evicted,
// even when those in use alone exceed the bound.

// DefaultMaxCache is a node's bound on cached executables: 1 GiB holds
// some twenty versions of a typical 50 MB driver program, so drivers
// rebuilt through a day of work do not pull again, while a long-lived node
// does not fill its disk.
const DefaultMaxCache int64 = 1 << 30

// use makes sure the cache holds the executable with this sum (see
// ensure), marks it used until release is called, and returns its path.
// What the bound then leaves no room for is evicted.
func (c *exeCache) use(ctx context.Context, sum [32]byte, size int64, sources []string) (path string, release func(), err error) {
	for {
		if err := c.ensure(ctx, sum, size, sources); err != nil {
			return "", nil, err
		}
		c.mu.Lock()
		if c.blobs.Has(sum) { // not evicted between its pull and now
			c.inUse[sum]++
			now := time.Now()
			_ = os.Chtimes(c.blobs.Path(sum), now, now)
			c.evictLocked()
			c.mu.Unlock()
			break
		}
		c.mu.Unlock()
	}
	release = func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.inUse[sum]--; c.inUse[sum] <= 0 {
			delete(c.inUse, sum)
		}
		c.evictLocked()
	}
	return c.blobs.Path(sum), release, nil
}

// evictLocked removes the least recently used executables not in use while
// the cache holds more than its bound. Files that are not a sum's name
// (a pull's temporary file) are left alone.
func (c *exeCache) evictLocked() {
	limit := c.max
	if limit <= 0 {
		limit = DefaultMaxCache
	}
	ents, err := os.ReadDir(c.blobs.Dir())
	if err != nil {
		return
	}
	type entry struct {
		sum  [32]byte
		size int64
		used time.Time
	}
	var es []entry
	var total int64
	for _, e := range ents {
		var sum [32]byte
		if b, err := hex.DecodeString(e.Name()); err != nil || len(b) != len(sum) {
			continue
		} else {
			copy(sum[:], b)
		}
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		total += fi.Size()
		es = append(es, entry{sum, fi.Size(), fi.ModTime()})
	}
	slices.SortFunc(es, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range es {
		if total <= limit {
			return
		}
		if c.inUse[e.sum] > 0 {
			continue
		}
		if os.Remove(filepath.Join(c.blobs.Dir(), hex.EncodeToString(e.sum[:]))) == nil {
			total -= e.size
			c.evicted++
		}
	}
}
