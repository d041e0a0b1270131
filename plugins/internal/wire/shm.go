package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gray-ml/gray/internal/shmem"
)

// The shared-memory step transport carries the fast step frames (the same
// bytes as on the socket) through a region both processes map, so that a
// step in the common case needs no system call: each side writes its frame,
// publishes it by storing a sequence word, and the other side, which spins
// on that word for a short while, sees it at once. Only a side that stopped
// spinning (an idle plugin, a slow step) sleeps in a futex on the word and
// costs the other side one wake-up system call.
//
// Negotiation, on the fast step socket: the host's first frame is a request
// of zero actions carrying the region's file descriptor (SCM_RIGHTS). A
// plugin that knows the transport maps the region and answers the single
// byte ShmAccepted; an older plugin sees an empty request and answers an
// error frame (status 1), and the host keeps stepping over the socket.
//
// Layout: a 512-byte header, each word on its own cache line, then the
// request area (reqCap bytes) and the answer area (ansCap bytes).
const (
	offMagic    = 0   // u32 shmMagic
	offReqCap   = 4   // u32
	offAnsCap   = 8   // u32
	offSpin     = 12  // u32 microseconds each side spins before sleeping
	offReqSeq   = 64  // u32 bumped by the host per request
	offAnsSeq   = 128 // u32 bumped by the plugin per answer
	offPlugWait = 192 // u32 1 while the plugin sleeps on reqSeq
	offHostWait = 256 // u32 1 while the host sleeps on ansSeq
	offClosed   = 320 // u32 1 once the host closed the transport
	offReqLen   = 384 // u32 length of the current request
	offAnsLen   = 448 // u32 length of the current answer
	shmHeader   = 512
	shmMagic    = 0x47534831 // "GSH1"
)

// le is the region's byte order, as on the socket.
var le = binary.LittleEndian

// ShmAccepted is the plugin's one-byte answer to the shared-memory hello.
const ShmAccepted = 2

// DefaultSpin is how long a side spins on the other's sequence word before
// sleeping, when the host does not say: a little longer than a typical step
// round trip, so that a busy loop never sleeps.
const DefaultSpin = 50 * time.Microsecond

// ErrShmClosed is returned by Wait once the host closed the transport.
var ErrShmClosed = errors.New("shared-memory step transport closed")

// Shared is one side's view of the shared step region. Write publishes this
// side's next frame, Wait returns the other side's. It is used by one
// goroutine per side.
type Shared struct {
	mem  []byte
	host bool
	spin time.Duration
	// Slice bounds each sleep, after which Wait calls its alive check.
	Slice time.Duration

	mine, theirs      *atomic.Uint32 // sequence words
	myWait, theirWait *atomic.Uint32
	closed            *atomic.Uint32
	myLen, theirLen   *atomic.Uint32
	myArea, theirArea []byte
	seen              uint32 // their last sequence value consumed
	rd                bytes.Reader
}

func (s *Shared) word(off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s.mem[off]))
}

// ShmSize is the size of a region with the given capacities.
func ShmSize(reqCap, ansCap int) int { return shmHeader + reqCap + ansCap }

// initShared lays out a fresh region (host side).
func initShared(mem []byte, reqCap, ansCap int, spin time.Duration) *Shared {
	s := &Shared{mem: mem}
	le.PutUint32(mem[offMagic:], shmMagic)
	le.PutUint32(mem[offReqCap:], uint32(reqCap))
	le.PutUint32(mem[offAnsCap:], uint32(ansCap))
	le.PutUint32(mem[offSpin:], uint32(spin/time.Microsecond))
	s.attach(true)
	return s
}

// attach sets up the views; the header must be valid.
func (s *Shared) attach(host bool) error {
	mem := s.mem
	if len(mem) < shmHeader || le.Uint32(mem[offMagic:]) != shmMagic {
		return errors.New("shared step region: bad header")
	}
	reqCap, ansCap := int(le.Uint32(mem[offReqCap:])), int(le.Uint32(mem[offAnsCap:]))
	if ShmSize(reqCap, ansCap) > len(mem) {
		return fmt.Errorf("shared step region of %d bytes is smaller than its header says (%d + %d)", len(mem), reqCap, ansCap)
	}
	s.host = host
	s.spin = time.Duration(le.Uint32(mem[offSpin:])) * time.Microsecond
	req := mem[shmHeader : shmHeader+reqCap : shmHeader+reqCap]
	ans := mem[shmHeader+reqCap : shmHeader+reqCap+ansCap : shmHeader+reqCap+ansCap]
	s.closed = s.word(offClosed)
	if host {
		s.mine, s.theirs = s.word(offReqSeq), s.word(offAnsSeq)
		s.myWait, s.theirWait = s.word(offHostWait), s.word(offPlugWait)
		s.myLen, s.theirLen = s.word(offReqLen), s.word(offAnsLen)
		s.myArea, s.theirArea = req, ans
		if s.Slice == 0 {
			s.Slice = 2 * time.Millisecond
		}
	} else {
		s.mine, s.theirs = s.word(offAnsSeq), s.word(offReqSeq)
		s.myWait, s.theirWait = s.word(offPlugWait), s.word(offHostWait)
		s.myLen, s.theirLen = s.word(offAnsLen), s.word(offReqLen)
		s.myArea, s.theirArea = ans, req
		if s.Slice == 0 {
			s.Slice = time.Second
		}
	}
	s.seen = s.theirs.Load()
	return nil
}

// Cap is the largest frame this side can Write.
func (s *Shared) Cap() int { return len(s.myArea) }

// ErrFrameTooLarge is returned by Write for a frame beyond Cap.
var ErrFrameTooLarge = errors.New("frame larger than the shared step region")

// Write publishes p as this side's next frame (a request from the host, an
// answer from the plugin) and wakes the other side if it sleeps. It
// implements io.Writer so that FastWriter can encode into it.
func (s *Shared) Write(p []byte) (int, error) {
	if len(p) > len(s.myArea) {
		return 0, fmt.Errorf("%w: %d bytes, room for %d", ErrFrameTooLarge, len(p), len(s.myArea))
	}
	copy(s.myArea, p)
	s.myLen.Store(uint32(len(p)))
	s.mine.Add(1)
	// The sequentially consistent store above and load below pair with the
	// sleeper's store of its wait flag and load of the word: either it sees
	// the new sequence value or this side sees its flag.
	if s.theirWait.Load() != 0 {
		shmem.Wake(s.mine)
	}
	return len(p), nil
}

// Wait returns the other side's next frame, valid until this side's next
// Write. It spins for the agreed time, then sleeps in slices of s.Slice,
// calling alive after each: an error from alive ends the wait with it (a
// dead plugin, a deadline passed, a host gone).
func (s *Shared) Wait(alive func() error) (*bytes.Reader, error) {
	if err := s.waitSeq(alive); err != nil {
		return nil, err
	}
	n := int(s.theirLen.Load())
	if n > len(s.theirArea) {
		return nil, fmt.Errorf("shared step region: frame of %d bytes announced in an area of %d (corrupt region?)", n, len(s.theirArea))
	}
	s.rd.Reset(s.theirArea[:n])
	return &s.rd, nil
}

func (s *Shared) arrived() bool {
	if v := s.theirs.Load(); v != s.seen {
		s.seen = v
		return true
	}
	return false
}

func (s *Shared) waitSeq(alive func() error) error {
	if s.spin > 0 {
		start := time.Now()
		for i := 1; ; i++ {
			if s.arrived() {
				return nil
			}
			if i%64 == 0 {
				if time.Since(start) > s.spin {
					break
				}
				osYield() // let the other process have this core on a busy machine
			}
		}
	}
	for {
		if s.closed.Load() != 0 {
			return ErrShmClosed
		}
		s.myWait.Store(1)
		if s.arrived() {
			s.myWait.Store(0)
			return nil
		}
		shmem.Wait(s.theirs, s.seen, s.Slice)
		s.myWait.Store(0)
		if s.arrived() {
			return nil
		}
		if s.closed.Load() != 0 {
			return ErrShmClosed
		}
		if alive != nil {
			if err := alive(); err != nil {
				return err
			}
		}
	}
}

// Close marks the transport closed (the host's side wakes a sleeping
// plugin, which then ends its loop) and unmaps this side's view.
func (s *Shared) Close() error {
	if s.mem == nil {
		return nil
	}
	if s.host {
		s.closed.Store(1)
		shmem.Wake(s.mine) // a sleeping plugin waits on the host's sequence word
	}
	err := unmap(s.mem)
	s.mem = nil
	return err
}

// CreateShared makes a region for requests of up to reqCap bytes and answers
// of up to ansCap bytes, each side spinning spin before sleeping (0: no
// spinning), and returns the host's view and the file to send the plugin.
// The caller closes the file once sent.
func CreateShared(reqCap, ansCap int, spin time.Duration) (*Shared, *os.File, error) {
	f, mem, err := shmem.CreateRegion("gray-step", ShmSize(reqCap, ansCap))
	if err != nil {
		return nil, nil, err
	}
	return initShared(mem, reqCap, ansCap, spin), f, nil
}

// MapShared maps the region the host sent (plugin side).
func MapShared(f *os.File) (*Shared, error) {
	mem, err := mapFile(f)
	if err != nil {
		return nil, err
	}
	s := &Shared{mem: mem}
	if err := s.attach(false); err != nil {
		unmap(mem)
		return nil, err
	}
	return s, nil
}
