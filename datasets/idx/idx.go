// Package idx reads and writes IDX files, the format of the MNIST and
// Fashion-MNIST datasets: a magic number naming the element type and the
// number of dimensions, the dimensions as big-endian uint32s, then the
// elements in row-major order. Files may be gzip-compressed; Read detects
// that from the first bytes, whatever the file's name.
//
// Only unsigned-byte elements (type 0x08, the type of every MNIST-style
// image and label file) are supported; other element types are a clear
// error rather than a silent misreading.
package idx

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// TypeUint8 is the IDX element-type code of unsigned bytes.
const TypeUint8 = 0x08

// maxElements bounds the size a header may declare (2³¹ elements), so that
// a corrupted header is an error instead of an enormous allocation.
const maxElements = 1 << 31

// Array is the content of an IDX file of unsigned bytes.
type Array struct {
	// Dims are the dimensions, outermost first: [count, rows, cols] for
	// images, [count] for labels.
	Dims []int
	// Data holds the elements in row-major order; its length is the
	// product of Dims.
	Data []uint8
	// Declared is the first dimension the header declares: Dims[0], or
	// more when ReadN read only a prefix.
	Declared int
}

// ReadFile reads the IDX file at path (gzipped or not). Errors name the
// file and what is wrong with it.
func ReadFile(path string) (*Array, error) { return ReadFileN(path, 0) }

// ReadFileN is ReadFile reading at most n items along the first dimension
// (all of them when n <= 0); see ReadN.
func ReadFileN(path string, n int) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the file and the cause
	}
	defer f.Close()
	a, err := ReadN(f, n)
	if err != nil {
		return nil, fmt.Errorf("idx: %s: %w", path, err)
	}
	return a, nil
}

// typeNames names the element types of the IDX format, for error messages.
var typeNames = map[byte]string{0x08: "unsigned byte", 0x09: "signed byte", 0x0B: "int16", 0x0C: "int32", 0x0D: "float32", 0x0E: "float64"}

// Read reads one IDX array from r, decompressing it first when it starts
// with the gzip magic bytes. It rejects data that ends early, trailing
// bytes after the declared data and a failing gzip checksum.
func Read(r io.Reader) (*Array, error) { return ReadN(r, 0) }

// ReadN is Read keeping only the first n items along the first dimension
// (all of them when n <= 0), for short runs on a large file: it reads and
// decompresses only that prefix, so it cannot check what follows it.
func ReadN(r io.Reader, n int) (*Array, error) {
	br := bufio.NewReader(r)
	if head, err := br.Peek(2); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("corrupt gzip header: %w", err)
		}
		defer zr.Close()
		zr.Multistream(false)
		return read(bufio.NewReader(zr), "gzip data", n)
	}
	return read(br, "file", n)
}

func read(r *bufio.Reader, what string, limit int) (*Array, error) {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return nil, fmt.Errorf("truncated: %s too short for the 4-byte IDX magic number (%w)", what, err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("not an IDX file: magic number %#x does not start with two zero bytes", magic)
	}
	if magic[2] != TypeUint8 {
		name := typeNames[magic[2]]
		if name == "" {
			return nil, fmt.Errorf("corrupt IDX header: unknown element type %#02x", magic[2])
		}
		return nil, fmt.Errorf("element type %#02x (%s) is not supported; only unsigned bytes (0x08) are", magic[2], name)
	}
	nd := int(magic[3])
	if nd == 0 {
		return nil, errors.New("corrupt IDX header: zero dimensions")
	}
	dims := make([]int, nd)
	total := 1
	for i := range dims {
		var d uint32
		if err := binary.Read(r, binary.BigEndian, &d); err != nil {
			return nil, fmt.Errorf("truncated: the %s ends inside the header, after %d of its %d dimensions (%w)", what, i, nd, err)
		}
		dims[i] = int(d)
		if d == 0 {
			total = 0
		} else if total > 0 {
			total *= int(d)
			if total > maxElements {
				return nil, fmt.Errorf("corrupt IDX header: dimensions %v declare more than %d elements", dims[:i+1], maxElements)
			}
		}
	}
	declared := dims[0]
	prefix := limit > 0 && limit < dims[0]
	if prefix {
		total = total / dims[0] * limit
		dims[0] = limit
	}
	// Read through a limit so a header that overstates the size never
	// allocates more than the data that is actually there.
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, int64(total)))
	if err != nil {
		return nil, fmt.Errorf("reading %d bytes of data: %w", total, err)
	}
	if int(n) < total {
		return nil, fmt.Errorf("truncated: the header declares %v = %d bytes of data, the %s holds %d", dims, total, what, n)
	}
	if prefix {
		return &Array{Dims: dims, Data: buf.Bytes(), Declared: declared}, nil
	}
	extra, err := r.Discard(1 << 20)
	if err != nil && !errors.Is(err, io.EOF) {
		// A gzip stream reports a bad checksum or length only at its end.
		return nil, fmt.Errorf("corrupt %s after the declared data: %w", what, err)
	}
	if extra > 0 {
		return nil, fmt.Errorf("corrupt: %d unexpected bytes after the %d bytes of data the header declares (dimensions %v)", extra, total, dims)
	}
	return &Array{Dims: dims, Data: buf.Bytes(), Declared: declared}, nil
}

// Write writes a as an uncompressed IDX file of unsigned bytes.
func Write(w io.Writer, a *Array) error {
	if len(a.Dims) == 0 || len(a.Dims) > 255 {
		return fmt.Errorf("idx: %d dimensions; IDX holds 1 to 255", len(a.Dims))
	}
	total := 1
	for _, d := range a.Dims {
		if d < 0 || d > 1<<32-1 {
			return fmt.Errorf("idx: dimension %d out of range", d)
		}
		total *= d
	}
	if total != len(a.Data) {
		return fmt.Errorf("idx: dimensions %v need %d elements, got %d", a.Dims, total, len(a.Data))
	}
	head := []byte{0, 0, TypeUint8, byte(len(a.Dims))}
	for _, d := range a.Dims {
		head = binary.BigEndian.AppendUint32(head, uint32(d))
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	_, err := w.Write(a.Data)
	return err
}

// WriteFile writes a to path, gzip-compressed when gz is set.
func WriteFile(path string, a *Array, gz bool) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if !gz {
		return Write(f, a)
	}
	zw := gzip.NewWriter(f)
	if err := Write(zw, a); err != nil {
		return err
	}
	return zw.Close()
}
