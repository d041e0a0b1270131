package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// StoreSink gives fresh pages as a file to write at offsets (no mapping to
// fault in) and a freed object's pages as their mapping; fetches through
// either, over one stream or parallel ranges, land whole.
func TestStoreSinkFreshThenReusedPages(t *testing.T) {
	const size = FirstRequestBytes + 2*MinStreamBytes + 4099 // three ranges
	src, dst := openStore(t, 64<<20), openStore(t, 256<<20)
	addr := serve(t, StoreSource(src))
	sink := StoreSink(dst)
	for _, streams := range []int{1, 3} {
		c := newClient(t)
		c.Streams = streams
		for i, wantMapped := range []bool{false, true, true} { // fresh; reused (mapped then); reused (kept mapped)
			t.Run(fmt.Sprintf("streams=%d/%d", streams, i), func(t *testing.T) {
				id := objectID(uint64(500 + 10*streams + i))
				want := randomBytes(size, uint64(i+streams))
				putBytes(t, src, id, want)
				k := ObjectKey(id)
				if streams == 1 { // what the sink offers, then give it back
					room, err := sink.Create(k, size)
					if err != nil {
						t.Fatal(err)
					}
					if mapped := room.Buf != nil; mapped != wantMapped || (room.Buf == nil) == (room.At == nil) {
						t.Fatalf("room: mapped %v, writer %v; want mapped %v and exactly one of them", mapped, room.At != nil, wantMapped)
					}
					sink.Abort(k)
				}
				if err := c.Fetch(context.Background(), addr, k, sink); err != nil {
					t.Fatal(err)
				}
				got, err := dst.Get(storeID(id))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatal("the fetched bytes differ from those sent")
				}
				if err := dst.Unpin(storeID(id)); err != nil {
					t.Fatal(err)
				}
				if err := dst.Release(storeID(id)); err != nil { // its pages become the next one's
					t.Fatal(err)
				}
			})
		}
	}
	if st := dst.Stats(); st.ReusedBytes == 0 {
		t.Fatalf("no fetch reused freed pages: %+v", st)
	}
}

// A DirSink transfer cut in the middle leaves nothing in the directory: no
// object, no temporary file.
func TestDirSinkServerDiesMidTransfer(t *testing.T) {
	for _, size := range []uint64{1 << 20, 3 * FirstRequestBytes} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			addr := dyingServer(t, size)
			dir := t.TempDir()
			c := newClient(t)
			if err := c.Fetch(context.Background(), addr, ObjectKey(objectID(6)), DirSink(dir)); err == nil {
				t.Fatal("a transfer cut in half: no error")
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
				t.Fatalf("the failed transfer left %v", left)
			}
		})
	}
}

// failingSink gives a writer that fails after some bytes, as a full file
// system would, and records what the client called.
type failingSink struct {
	mu               sync.Mutex
	written          int64
	aborted, commits int
}

var errDiskFull = errors.New("no space left on device (test)")

func (s *failingSink) Create(k Key, size int64) (Room, error) { return Room{At: s}, nil }
func (s *failingSink) WriteAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written+int64(len(p)) > 5<<20 {
		return 0, errDiskFull
	}
	s.written += int64(len(p))
	return len(p), nil
}
func (s *failingSink) Commit(k Key) error { s.mu.Lock(); s.commits++; s.mu.Unlock(); return nil }
func (s *failingSink) Abort(k Key)        { s.mu.Lock(); s.aborted++; s.mu.Unlock() }

// A sink's writer that fails mid-transfer fails the fetch with its error,
// and the sink's object is aborted, never committed.
func TestFetchSinkWriteFails(t *testing.T) {
	src := openStore(t, 64<<20)
	id := objectID(7)
	putBytes(t, src, id, randomBytes(FirstRequestBytes+2*MinStreamBytes, 7))
	addr := serve(t, StoreSource(src))
	sink := &failingSink{}
	err := newClient(t).Fetch(context.Background(), addr, ObjectKey(id), sink)
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("fetch into a failing writer: %v, want the writer's error", err)
	}
	if sink.aborted != 1 || sink.commits != 0 {
		t.Fatalf("aborted %d times, committed %d; want one abort, no commit", sink.aborted, sink.commits)
	}
}
