package transfer

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gray-ml/gray/runtime/ids"
)

// Key names what a Server serves: an object of a node's store (ObjectKey) or
// a content-addressed blob (BlobKey). At most MaxKeyLen bytes.
type Key string

// MaxKeyLen is the longest Key the protocol carries.
const MaxKeyLen = 1024

const (
	objectPrefix = "obj/"
	blobPrefix   = "blob/"
)

// ObjectKey names the object id of a node's object store.
func ObjectKey(id ids.ObjectID) Key { return Key(objectPrefix + id.String()) }

// BlobKey names the blob whose content has this SHA-256 sum.
func BlobKey(sha256 [32]byte) Key { return Key(blobPrefix + hex.EncodeToString(sha256[:])) }

// objectHex returns the hex object id of an ObjectKey.
func (k Key) objectHex() (string, bool) {
	h, ok := strings.CutPrefix(string(k), objectPrefix)
	if !ok || len(h) != 2*len(ids.ObjectID{}) {
		return "", false
	}
	_, err := hex.DecodeString(h)
	return h, err == nil
}

// blobSum returns the sum of a BlobKey.
func (k Key) blobSum() ([32]byte, bool) {
	var sum [32]byte
	h, ok := strings.CutPrefix(string(k), blobPrefix)
	if !ok || len(h) != 2*len(sum) {
		return sum, false
	}
	_, err := hex.Decode(sum[:], []byte(h))
	return sum, err == nil
}

// ErrNotFound is returned (wrapped with the key and the server's address)
// by Fetch when the server has no such object, and by Sources for keys they
// do not hold.
var ErrNotFound = errors.New("transfer: no such object")

// Source is what a Server serves. It must be safe for concurrent use.
type Source interface {
	// Open returns the bytes of k, valid and unchanged until release is
	// called, or an error wrapping ErrNotFound if there is no such object.
	Open(k Key) (data []byte, release func(), err error)
}

// Room is where a Sink takes an object's bytes: Buf, memory that the
// client reads them straight into (exactly the object's size), or, when Buf
// is nil and the object is not empty, At, which the client writes them to
// in pieces at their offsets (concurrently, on disjoint ranges). At suits
// fresh shared memory: written through its file, the kernel allocates each
// page as it copies into it, where reading into a new mapping would first
// allocate the pages and then fault each one in (together about twice the
// cost of the copy from the socket; see
// benchmarks/results/cluster-objects.md).
type Room struct {
	Buf []byte
	At  io.WriterAt
}

// Sink receives fetched objects. It must be safe for concurrent use with
// different keys. For each key, Fetch calls Create, fills the room it
// returned completely, then calls Commit; if the transfer fails after
// Create, or Commit fails, it calls Abort instead, and nothing of the object
// may remain visible.
type Sink interface {
	// Create returns room for exactly size bytes of k.
	Create(k Key, size int64) (Room, error)
	// Commit makes k, now filled, visible.
	Commit(k Key) error
	// Abort drops k after Create (or after a failed Commit).
	Abort(k Key)
}

// Chain serves from each of srcs in turn: the first that has k (does not
// answer ErrNotFound) serves it. A node serves its store and its blobs on
// one port with Chain(StoreSource(store), blobs).
func Chain(srcs ...Source) Source { return chain(srcs) }

type chain []Source

func (c chain) Open(k Key) ([]byte, func(), error) {
	var errs []error
	for _, s := range c {
		data, release, err := s.Open(k)
		if err == nil || !errors.Is(err, ErrNotFound) {
			return data, release, err
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, nil, fmt.Errorf("%w: %s (no sources)", ErrNotFound, k)
	}
	return nil, nil, errors.Join(errs...)
}
