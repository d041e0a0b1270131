package objstore

import (
	"fmt"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkWindowAlloc times what a first Get adds for the window: the
// allocation and the mapping laid over it (and, untimed by itself, giving
// the range back), allocating with mallocgc and no zeroing (as mapWindow
// does) or with make, which clears a reused span first.
func BenchmarkWindowAlloc(b *testing.B) {
	s := newStore(b, 1<<30, nil)
	for _, size := range []int{1 << 20, 64 << 20} {
		id := ID(fmt.Sprint("w", size))
		put(b, s, id, size, 1)
		fd, err := unix.Open(Path(s.Dir(), id), unix.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		allocs := map[string]func(n uintptr) unsafe.Pointer{
			"mallocgc": func(n uintptr) unsafe.Pointer { return mallocgc(n, nil, false) },
			"make":     func(n uintptr) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(make([]byte, n))) },
		}
		for _, name := range []string{"mallocgc", "make"} {
			alloc := allocs[name]
			b.Run(fmt.Sprintf("%s-%dKiB", name, size>>10), func(b *testing.B) {
				n := uintptr(size)
				for b.Loop() {
					p := alloc(n)
					if err := mmapFixed(p, n, unix.PROT_READ, unix.MAP_SHARED, fd); err != nil {
						b.Fatal(err)
					}
					giveBack((*byte)(p), n)
				}
			})
		}
		_ = unix.Close(fd)
	}
}
