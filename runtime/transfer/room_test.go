package transfer

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
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
