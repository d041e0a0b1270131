package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/gray-ml/gray/internal/shmem"
)

// The shared-memory fast path. Between two processes on one machine, a
// Conn can carry its frames (the same bytes as on the socket) through two
// byte rings in a region both processes map, one ring per direction. A
// writer copies its frames into the ring and publishes them by storing the
// ring's tail; a reader that is waiting spins on the tail for a short while
// (Spin), so a reply that comes quickly is seen without any system call on
// either side. A reader that stopped spinning dozes (a worker's reader, or
// a goroutine that Helps): it sleeps in a futex on the ring for up to
// dozeFor, which the writer wakes directly. After that (and Serve at once)
// it sleeps in a read of the socket after announcing it in the ring; the
// writer that sees the announcement writes one byte (a wake-up token) to
// the socket. So the socket still carries the wake-ups of idle readers and
// the end of the connection (a closed socket, a dead peer), and idle
// readers cost no CPU and no thread: they wait in the network poller, as
// before.
//
// A writer that finds the ring full (a peer that is busy and not reading)
// hands the rest to the connection's background writer, as with a full
// socket; that goroutine waits for room in a futex on the ring's head,
// which the reader wakes when it sees the writer waiting.
//
// Negotiation happens once, at connect, before any other frame: the
// accepting side (the driver) calls Offer, the dialling side (a worker)
// calls Answer. Offer sends a frame of type typeOffer with the region's
// file descriptor (SCM_RIGHTS), or typePlain where the fast path is not
// possible (not Linux, not a Unix socket, turned off by GRAY_WIRE_SHM).
// The other side maps the region and answers typeAccept (both sides then
// switch) or typeDecline (both stay on the socket). A connection between
// machines (TCP) is never offered the region.

// Frame types of the transport's own handshake, outside the range the
// runtime's messages use.
const (
	typePlain   byte = 0xF0 // no fast path: everything stays on the socket
	typeOffer   byte = 0xF1 // the region's descriptor is attached
	typeAccept  byte = 0xF2 // the region is mapped: switch
	typeDecline byte = 0xF3 // could not map it: stay on the socket
)

// EnvShm configures the shared-memory fast path of the accepting side.
// It is on unless turned off: unset or "on" spins DefaultSpin, "off" keeps
// every connection on the socket, a duration ("5us") sets how long a
// waiting reader spins at most before sleeping ("0": it sleeps at once).
const EnvShm = "GRAY_WIRE_SHM"

// DefaultSpin is the longest a waiting reader spins on the ring before it
// sleeps. A reader spins only while the recent waits were short enough
// for spinning to catch them (see adapt): after its last message, an end
// spins at most this long, once, and then not at all while it is idle.
const DefaultSpin = 25 * time.Microsecond

// ringSize is the capacity of each direction's ring (a power of two). A
// frame larger than a ring goes through in pieces.
const ringSize = 64 << 10

// Region layout: a header of words, each on its own cache line, then the
// two rings' bytes. Ring a carries the offering side's frames, ring b the
// answering side's.
const (
	offMagic  = 0
	offSize   = 4  // u32 bytes of each ring
	offSpin   = 8  // u32 nanoseconds of spinning
	offA      = 64 // ring a's words
	offB      = offA + ringWords*64
	ringWords = 4 // tail, head, sleeping, waiting
	regHeader = offB + ringWords*64
	shmMagic  = 0x47525731 // "GRW1"
)

// le is the region's byte order.
var le = binary.LittleEndian

// ring is one direction of the region.
type ring struct {
	data     []byte
	mask     uint32
	tail     *atomic.Uint32 // bytes written; stored by the writer only
	head     *atomic.Uint32 // bytes read; stored by the reader only
	sleeping *atomic.Uint32 // 1 while the reader sleeps in a read of the socket
	waiting  *atomic.Uint32 // 1 while the writer sleeps on head, waiting for room
}

func word(mem []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&mem[off]))
}

func newRing(mem []byte, words, data int, size uint32) *ring {
	return &ring{
		data:     mem[data : data+int(size) : data+int(size)],
		mask:     size - 1,
		tail:     word(mem, words),
		head:     word(mem, words+64),
		sleeping: word(mem, words+128),
		waiting:  word(mem, words+192),
	}
}

// States of a ring's reader, in its sleeping word.
const (
	awake       = 0 // reading, spinning, or about to look at the ring
	sleepSocket = 1 // asleep in a read of the socket: the writer sends a token
	sleepFutex  = 2 // asleep in a futex on tail (doze): the writer wakes it
)

// dozeFor is the longest a reader sleeps in a futex on the ring (doze)
// before it sleeps in a read of the socket instead. A futex wake reaches
// the sleeping thread itself, where a token wakes the network poller,
// which then hands the reader's goroutine to a thread; but a dozing
// reader holds its thread and never sees the socket end, so it dozes only
// for as long as a quick answer may take.
const dozeFor = time.Millisecond

// doze sleeps in a futex on the ring's tail until bytes come, stop (if
// not nil) reports true, or d has passed; it reports whether bytes came.
// stop is looked at only when the sleep ends, so it must be made true by
// something that also writes into the ring, or be fine to see late.
func (r *ring) doze(d time.Duration, stop func() bool) bool {
	end := time.Now().Add(d)
	for {
		t := r.tail.Load()
		if t != r.head.Load() {
			return true
		}
		left := time.Until(end)
		if left <= 0 || stop != nil && stop() {
			return false
		}
		r.sleeping.Store(sleepFutex)
		if r.tail.Load() == t {
			shmem.Wait(r.tail, t, left)
		}
		r.sleeping.CompareAndSwap(sleepFutex, awake)
	}
}

// avail is how many bytes the reader can take.
func (r *ring) avail() uint32 { return r.tail.Load() - r.head.Load() }

// full reports whether the writer has no room.
func (r *ring) full() bool { return r.tail.Load()-r.head.Load() == uint32(len(r.data)) }

// put copies as much of p as fits and publishes it; it reports how much.
func (r *ring) put(p []byte) int {
	t := r.tail.Load()
	room := uint32(len(r.data)) - (t - r.head.Load())
	n := min(uint32(len(p)), room)
	if n == 0 {
		return 0
	}
	off := t & r.mask
	c := copy(r.data[off:], p[:n])
	copy(r.data, p[c:n])
	// The sequentially consistent store of tail and the writer's later
	// load of sleeping pair with the reader's store of sleeping and load
	// of tail: either the reader sees the bytes or the writer sees it
	// asleep.
	r.tail.Store(t + n)
	return int(n)
}

// peek copies what is there, up to len(p), without taking it.
func (r *ring) peek(p []byte) int {
	h := r.head.Load()
	n := min(uint32(len(p)), r.tail.Load()-h)
	off := h & r.mask
	c := copy(p[:n], r.data[off:])
	copy(p[c:n], r.data)
	return int(n)
}

// get copies what is there, up to len(p), and frees its room; a writer
// waiting for room is woken.
func (r *ring) get(p []byte) int {
	h := r.head.Load()
	n := min(uint32(len(p)), r.tail.Load()-h)
	if n == 0 {
		return 0
	}
	off := h & r.mask
	c := copy(p[:n], r.data[off:])
	copy(p[c:n], r.data)
	r.head.Store(h + n)
	if r.waiting.Load() != 0 && r.waiting.CompareAndSwap(1, 0) {
		shmem.Wake(r.head)
	}
	return int(n)
}

// shm is one end's view of a mapped region.
type shm struct {
	mem  []byte
	spin time.Duration // the most a wait spins
	// How long waits spin: Serve's reader's (and a worker's), and those
	// of goroutines that Help. They adapt apart: where a helper waits for
	// each answer, Serve's waits are the long gaps between calls.
	rd, help spinner
	tx, rx   *ring
	tok      [64]byte // wake-up tokens read from the socket
}

// attach lays the rings over mem; offering tells which ring this end
// writes.
func attach(mem []byte, offering bool) (*shm, error) {
	if len(mem) < regHeader || le.Uint32(mem[offMagic:]) != shmMagic {
		return nil, errors.New("wire: shared-memory region with a bad header")
	}
	size := le.Uint32(mem[offSize:])
	if size == 0 || size&(size-1) != 0 || regHeader+2*int(size) > len(mem) {
		return nil, fmt.Errorf("wire: shared-memory region of %d bytes cannot hold two rings of %d", len(mem), size)
	}
	spin := time.Duration(le.Uint32(mem[offSpin:]))
	s := &shm{mem: mem, spin: spin, rd: newSpinner(spin), help: newSpinner(spin)}
	a := newRing(mem, offA, regHeader, size)
	b := newRing(mem, offB, regHeader+int(size), size)
	if offering {
		s.tx, s.rx = a, b
	} else {
		s.tx, s.rx = b, a
	}
	// The region stays mapped while either end's Conn is reachable: a
	// reader or writer may still be inside it when the Conn closes.
	runtime.AddCleanup(s, func(mem []byte) { _ = unmap(mem) }, mem)
	return s, nil
}

// shmConfig reads EnvShm: whether to offer the region, and the spin.
func shmConfig() (bool, time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(EnvShm))
	switch v {
	case "off":
		return false, 0, nil
	case "", "on":
		return true, DefaultSpin, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 && d <= time.Second {
		return true, d, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n == 0 {
		return true, 0, nil
	}
	return false, 0, fmt.Errorf("wire: %s=%q: want \"on\", \"off\" or a spin duration such as 10us (at most 1s)", EnvShm, v)
}

// newRegion makes a mapped region with two rings, spinning spin.
func newRegion(spin time.Duration) (*os.File, []byte, error) {
	f, mem, err := shmem.CreateRegion("gray-wire", regHeader+2*ringSize)
	if err != nil {
		return nil, nil, err
	}
	le.PutUint32(mem[offMagic:], shmMagic)
	le.PutUint32(mem[offSize:], ringSize)
	le.PutUint32(mem[offSpin:], uint32(spin))
	return f, mem, nil
}

// Offer negotiates the shared-memory fast path from the accepting side. It
// must be called once, before any other frame is sent and after the
// peer's first frame was received; the peer calls Answer. Where the fast
// path is not possible the connection stays on the socket, and Offer
// returns nil: only a failed exchange is an error.
func (w *Conn) Offer() error {
	on, spin, err := shmConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err, "(the socket is used)")
	}
	if !on || !canPassFD(w.c) {
		return w.Send(typePlain, nil)
	}
	f, mem, err := newRegion(spin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "wire: shared-memory fast path unavailable, using the socket: %v\n", err)
		return w.Send(typePlain, nil)
	}
	err = sendFD(w.c, typeOffer, f)
	f.Close() // the mapping keeps the region
	if err != nil {
		_ = unmap(mem)
		return fmt.Errorf("wire: offering the shared-memory region: %w", err)
	}
	typ, _, err := w.Recv()
	if err != nil {
		_ = unmap(mem)
		return fmt.Errorf("wire: waiting for the answer to the shared-memory offer: %w", err)
	}
	switch typ {
	case typeAccept:
		s, err := attach(mem, true)
		if err != nil {
			_ = unmap(mem)
			return err
		}
		return w.use(s)
	case typeDecline:
		_ = unmap(mem)
		return nil
	}
	_ = unmap(mem)
	return fmt.Errorf("wire: frame of type %d where the answer to the shared-memory offer belongs", typ)
}

// Answer reads the accepting side's transport frame (see Offer) and
// switches to the shared-memory fast path if it was offered and can be
// mapped. It must be called before any frame other than the first is sent
// and before Recv.
func (w *Conn) Answer() error {
	typ, payload, fd, err := recvFD(w)
	if err != nil {
		return fmt.Errorf("wire: waiting for the transport offer: %w", err)
	}
	switch typ {
	case typePlain:
		if fd >= 0 {
			closeFD(fd)
		}
		return nil
	case typeOffer:
	default:
		if fd >= 0 {
			closeFD(fd)
		}
		return fmt.Errorf("wire: frame of type %d (%d bytes) where the transport offer belongs", typ, len(payload))
	}
	if fd < 0 {
		return w.Send(typeDecline, nil)
	}
	mem, err := mapFD(fd)
	var s *shm
	if err == nil {
		if s, err = attach(mem, false); err != nil {
			_ = unmap(mem)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "wire: shared-memory fast path unavailable, using the socket: %v\n", err)
		return w.Send(typeDecline, nil)
	}
	if err := w.Send(typeAccept, nil); err != nil {
		return err
	}
	return w.use(s)
}

// use switches the connection to s once the socket has nothing left to
// write.
func (w *Conn) use(s *shm) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.writing {
		w.idle.Wait()
	}
	if w.err != nil {
		return w.err
	}
	if w.r.Buffered() > 0 {
		return errors.New("wire: bytes on the socket after the shared-memory handshake")
	}
	w.shm = s
	return nil
}

// Shared reports whether the connection uses the shared-memory fast path.
func (w *Conn) Shared() bool { return w.shm != nil }

// ringRead reads what the peer wrote into the ring, at least one byte,
// waiting for it: spinning a while (see adapt), then asleep in a read of
// the socket (which also reports the connection's end).
func (w *Conn) ringRead(p []byte) (int, error) {
	s := w.shm
	r := s.rx
	if n := r.get(p); n > 0 {
		return n, nil
	}
	start := time.Now()
	if s.rd.now > 0 {
		if spinUntil(s.rd.now, r, false) {
			s.rd.adapt(time.Since(start))
			return r.get(p), nil
		}
	}
	if w.rerr == nil && r.doze(dozeFor, nil) {
		s.rd.adapt(time.Since(start))
		return r.get(p), nil
	}
	for {
		if w.rerr != nil {
			return 0, w.rerr // the socket ended and the ring is empty
		}
		r.sleeping.Store(sleepSocket)
		if r.avail() == 0 {
			_, err := w.c.Read(s.tok[:])
			if errors.Is(err, os.ErrDeadlineExceeded) && !w.aborted.Load() {
				_ = w.c.SetReadDeadline(time.Time{}) // a helper's kick (see Help)
				err = nil
			}
			if err != nil {
				w.rerr = err // read what the ring still holds first
				w.peerGone.Store(true)
			}
		}
		r.sleeping.Store(awake)
		if n := r.get(p); n > 0 {
			s.rd.adapt(time.Since(start))
			return n, nil
		}
	}
}

// spinner is how long one kind of wait spins (see adapt).
type spinner struct {
	max     time.Duration // the most a wait spins
	now     time.Duration // how long the next wait spins
	backoff int           // waits without spinning after the last spin that missed
	skip    int           // of them, still to go
}

func newSpinner(max time.Duration) spinner { return spinner{max: max, now: max} }

// adapt sets how long the next wait spins from how long this one took.
// A reader keeps spinning while its spins catch the peer's answers
// (spinning twice as long as the last wait took, at most spin). A spin
// that caught nothing (an idle connection, a slow task, or a machine too
// busy to run the peer at once, where spinning only takes the core the
// peer needs) stops the spinning: the next waits sleep at once, and after
// 1, 2, 4 ... 256 of them one wait tries spinning again. So an idle
// connection spins at most spin once after its last message and then
// once every 256 wake-ups.
func (s *spinner) adapt(took time.Duration) {
	switch {
	case s.now > 0 && took <= s.now: // the spin caught it
		s.backoff = 0
		s.now = min(s.max, max(2*took, 2*time.Microsecond))
	case s.now > 0: // it did not
		s.now = 0
		s.backoff = min(max(2*s.backoff, 1), 256)
		s.skip = s.backoff
	case s.skip > 0:
		s.skip--
	default: // try again
		s.now = s.max
	}
}

// shmReader lets Recv read the ring with io.ReadFull.
type shmReader struct{ w *Conn }

func (r shmReader) Read(p []byte) (int, error) { return r.w.ringRead(p) }

// spinUntil polls r for about d (see spinFor) until it has bytes to read
// (or with room, room to write); it reports whether they came.
func spinUntil(d time.Duration, r *ring, room bool) bool {
	if room {
		return spinFor(d, func() bool { return !r.full() })
	}
	return spinFor(d, func() bool { return r.avail() > 0 })
}

// ringWrite copies p into the ring, waking a sleeping reader. Without
// block it stops when the ring is full and reports how much it wrote;
// with block it waits for room (see waitRoom).
func (w *Conn) ringWrite(p []byte, block bool) (int, error) {
	r := w.shm.tx
	done := 0
	for {
		done += r.put(p[done:])
		if done > 0 {
			if err := w.wakeReader(r); err != nil {
				return done, err
			}
		}
		if done == len(p) || !block {
			return done, nil
		}
		if err := w.waitRoom(r); err != nil {
			return done, err
		}
	}
}

// wakeReader wakes the peer's reader after a write into r if it sleeps:
// in a read of the socket (a wake-up token) or in a futex (see doze).
func (w *Conn) wakeReader(r *ring) error {
	switch v := r.sleeping.Load(); {
	case v == sleepSocket && r.sleeping.CompareAndSwap(sleepSocket, awake):
		_, err := w.c.Write(wakeToken[:])
		return err
	case v == sleepFutex && r.sleeping.CompareAndSwap(sleepFutex, awake):
		shmem.Wake(r.tail)
	}
	return nil
}

// wakeToken is what a writer sends on the socket to wake a sleeping reader.
var wakeToken = [1]byte{1}

// waitRoom waits until the reader frees room in r, the connection is
// aborted, the peer is gone (its socket hung up: a process that died
// never frees room), or the grace of Close has passed. It sleeps in a
// futex on the ring's head, which the reader wakes (see ring.get).
func (w *Conn) waitRoom(r *ring) error {
	if spinUntil(w.shm.spin, r, true) {
		return nil
	}
	for {
		h := r.head.Load()
		r.waiting.Store(1)
		if !r.full() {
			r.waiting.Store(0)
			return nil
		}
		shmem.Wait(r.head, h, 10*time.Millisecond)
		if !r.full() {
			return nil
		}
		if w.aborted.Load() {
			return ErrClosed
		}
		// Nobody wakes this futex once the peer is gone: a dead peer is
		// seen on the socket, by this end's reader or by polling it.
		if w.peerGone.Load() || peerHungUp(w.raw) {
			return fmt.Errorf("wire: the peer closed the connection with %d bytes unread: %w", r.avail(), syscall.EPIPE)
		}
		if dl := w.deadline.Load(); dl != 0 && time.Now().UnixNano() > dl {
			return fmt.Errorf("wire: the peer read nothing for %v: %w", closeGrace, os.ErrDeadlineExceeded)
		}
	}
}
