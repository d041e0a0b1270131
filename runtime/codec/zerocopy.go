package codec

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/fxamacker/cbor/v2"
)

// InlineThreshold is the encoded size below which the runtime sends a value
// inline, with the task or the reply, instead of through the object store: a
// small value costs less to copy than a file, a mapping and the bookkeeping
// of a shared object. Ray uses the same figure (100 KiB).
const InlineThreshold = 100 << 10

// Align is the alignment and padding of every array buffer in the zero-copy
// format: Apache Arrow's recommended 64 bytes.
const Align = 64

// The zero-copy format ("GRAYZC"):
//
//	[0:8)    magic "GRAYZC" 0x00 0x01 (format name and version)
//	[8:12)   H, the length of the header, uint32 little-endian
//	[12:16)  reserved, zero
//	[16:16+H) header: the value in CBOR, with every numeric slice replaced by
//	         a placeholder (CBOR tag 1735549305, "gray", holding
//	         [kind, offset, length])
//	padding with zeros to D = the next multiple of 64
//	[D:...)  the array buffers: each starts at D+offset (offset a multiple
//	         of 64) and holds length little-endian elements, zero-padded to a
//	         multiple of 64 bytes
//
// Each buffer is exactly an Arrow values buffer of a primitive array
// (float32, float64, int32, int64 or uint8) with no nulls, so no validity
// bitmap: arrow-go can wrap it with memory.NewBufferBytes without a copy, and
// a decoder can return a Go slice that points into it.
const (
	magic      = "GRAYZC\x00\x01"
	prefixLen  = 16
	placeTag   = 0x67726179 // "gray"
	maxNesting = 64         // the decoder's MaxNestedLevels
)

// ArrayKind names the element type of an array buffer.
type ArrayKind uint8

// Array kinds, matching Arrow's primitive types of the same names.
const (
	Float32 ArrayKind = 1 + iota
	Float64
	Int32
	Int64
	Uint8
)

func (k ArrayKind) size() int {
	switch k {
	case Float32, Int32:
		return 4
	case Float64, Int64:
		return 8
	case Uint8:
		return 1
	}
	return 0
}

func (k ArrayKind) goType() reflect.Type {
	switch k {
	case Float32:
		return reflect.TypeFor[float32]()
	case Float64:
		return reflect.TypeFor[float64]()
	case Int32:
		return reflect.TypeFor[int32]()
	case Int64:
		return reflect.TypeFor[int64]()
	case Uint8:
		return reflect.TypeFor[uint8]()
	}
	return nil
}

func kindOf(elem reflect.Type) ArrayKind {
	switch elem.Kind() {
	case reflect.Float32:
		return Float32
	case reflect.Float64:
		return Float64
	case reflect.Int32:
		return Int32
	case reflect.Int64:
		return Int64
	case reflect.Uint8:
		return Uint8
	}
	return 0
}

// arrayRef is the header's placeholder for one array buffer.
type arrayRef struct {
	_    struct{} `cbor:",toarray"`
	Kind ArrayKind
	Off  uint64 // bytes from the start of the data section
	Len  uint64 // elements
}

var (
	refPtrType = reflect.TypeFor[*arrayRef]()
	refType    = reflect.TypeFor[arrayRef]()
	zcEnc      cbor.EncMode
	zcDec      cbor.DecMode
)

func init() {
	tags := cbor.NewTagSet()
	if err := tags.Add(cbor.TagOptions{EncTag: cbor.EncTagRequired, DecTag: cbor.DecTagRequired}, refType, placeTag); err != nil {
		panic(err)
	}
	var err error
	if zcEnc, err = (cbor.EncOptions{Sort: cbor.SortNone}).EncModeWithTags(tags); err != nil {
		panic(err)
	}
	if zcDec, err = (cbor.DecOptions{
		MaxNestedLevels:  maxNesting,
		MaxArrayElements: 1<<31 - 1,
		MaxMapPairs:      1 << 24,
	}).DecModeWithTags(tags); err != nil {
		panic(err)
	}
}

// typeInfo is what the codec knows about a Go type, computed once.
type typeInfo struct {
	t      reflect.Type
	mirror reflect.Type // the header's type; == t when walk is false
	walk   bool         // values must be converted (arrays, or interfaces inside)
	kind   ArrayKind    // non-zero: t is a numeric slice
	iface  bool         // t contains interface types
	cyclic bool         // t is recursive: its values may reach themselves (see cycle.go)
	err    error        // Check(t)
	elem   *typeInfo    // pointer, slice, array, map value
	fields []fieldInfo  // struct: the mirror's fields
}

type fieldInfo struct {
	index int // in t
	info  *typeInfo
}

// types caches typeInfo by reflect.Type; it is a memo of pure functions of
// the type, never of values.
var types sync.Map

var (
	cborMarshaler   = reflect.TypeFor[cbor.Marshaler]()
	binaryMarshaler = reflect.TypeFor[encoding.BinaryMarshaler]()
)

func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := types.Load(t); ok {
		return ti.(*typeInfo)
	}
	b := builder{visiting: map[reflect.Type]bool{}, built: map[reflect.Type]*typeInfo{}}
	ti := b.build(t)
	if b.recursive {
		// reflect cannot make recursive mirror types: such values travel as
		// plain CBOR, their arrays copied (still correct, not zero-copy).
		ti = &typeInfo{t: t, mirror: t, err: Check(t), cyclic: true}
		types.Store(t, ti)
		return ti
	}
	for typ, i := range b.built {
		types.LoadOrStore(typ, i)
	}
	v, _ := types.LoadOrStore(t, ti)
	return v.(*typeInfo)
}

type builder struct {
	visiting  map[reflect.Type]bool
	built     map[reflect.Type]*typeInfo
	recursive bool
}

func (b *builder) build(t reflect.Type) *typeInfo {
	if ti, ok := types.Load(t); ok {
		if ti.(*typeInfo).cyclic {
			b.recursive = true // a type holding a recursive one is walked whole too
		}
		return ti.(*typeInfo)
	}
	if ti := b.built[t]; ti != nil {
		return ti
	}
	ti := &typeInfo{t: t, mirror: t}
	if t.Kind() == reflect.Slice {
		if k := kindOf(t.Elem()); k != 0 {
			ti.kind, ti.walk, ti.mirror = k, true, refPtrType
			b.built[t] = ti
			return ti
		}
	}
	if b.visiting[t] {
		b.recursive = true
		return ti
	}
	b.visiting[t] = true
	defer delete(b.visiting, t)
	ti.err = Check(t)
	if t.Implements(cborMarshaler) || t.Implements(binaryMarshaler) ||
		reflect.PointerTo(t).Implements(cborMarshaler) || reflect.PointerTo(t).Implements(binaryMarshaler) {
		b.built[t] = ti // the type encodes itself: leave it alone
		return ti
	}
	switch t.Kind() {
	case reflect.Interface:
		ti.iface, ti.walk = true, true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		e := b.build(t.Elem())
		ti.elem = e
		if e.walk {
			ti.walk, ti.iface = true, e.iface
			switch t.Kind() {
			case reflect.Pointer:
				ti.mirror = reflect.PointerTo(e.mirror)
			case reflect.Slice:
				ti.mirror = reflect.SliceOf(e.mirror)
			case reflect.Array:
				ti.mirror = reflect.ArrayOf(t.Len(), e.mirror)
			case reflect.Map:
				ti.mirror = reflect.MapOf(t.Key(), e.mirror)
			}
		}
	case reflect.Struct:
		var fields []reflect.StructField
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("cbor") == "-" {
				continue
			}
			fi := b.build(f.Type)
			ti.walk = ti.walk || fi.walk
			ti.iface = ti.iface || fi.iface
			ti.fields = append(ti.fields, fieldInfo{index: i, info: fi})
			fields = append(fields, reflect.StructField{Name: f.Name, Type: fi.mirror, Tag: f.Tag, Anonymous: f.Anonymous})
		}
		if ti.walk && !b.recursive {
			ti.mirror = reflect.StructOf(fields)
		}
	}
	b.built[t] = ti
	return ti
}

// encoder collects the array buffers of one value.
type encoder struct {
	bufs  []rawBuf
	off   uint64
	depth int
}

type rawBuf struct {
	p   unsafe.Pointer
	n   int // bytes
	off uint64
}

func align(n uint64) uint64 { return (n + Align - 1) &^ (Align - 1) }

func (e *encoder) toMirror(v reflect.Value, ti *typeInfo) (reflect.Value, error) {
	if ti.cyclic {
		return v, checkCycles(v)
	}
	if !ti.walk {
		return v, nil
	}
	if ti.kind != 0 {
		if v.IsNil() {
			return reflect.Zero(refPtrType), nil
		}
		n := v.Len()
		ref := &arrayRef{Kind: ti.kind, Off: e.off, Len: uint64(n)}
		nb := n * ti.kind.size()
		if nb > 0 {
			e.bufs = append(e.bufs, rawBuf{p: v.UnsafePointer(), n: nb, off: e.off})
			e.off += align(uint64(nb))
		}
		return reflect.ValueOf(ref), nil
	}
	e.depth++
	defer func() { e.depth-- }()
	if e.depth > maxNesting {
		return reflect.Value{}, fmt.Errorf("codec: value nested more than %d levels deep (is it cyclic?)", maxNesting)
	}
	switch ti.t.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return reflect.Zero(ti.t), nil
		}
		dyn := v.Elem()
		di := infoOf(dyn.Type())
		if di.err != nil {
			return reflect.Value{}, di.err
		}
		m, err := e.toMirror(dyn, di)
		if err != nil {
			return reflect.Value{}, err
		}
		out := reflect.New(ti.t).Elem()
		if m.Type().Implements(ti.t) {
			out.Set(m)
		} else {
			out.Set(dyn) // a non-empty interface: the mirror lacks its methods
		}
		return out, nil
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(ti.mirror), nil
		}
		m, err := e.toMirror(v.Elem(), ti.elem)
		if err != nil {
			return reflect.Value{}, err
		}
		out := reflect.New(ti.mirror.Elem())
		out.Elem().Set(m)
		return out, nil
	case reflect.Slice, reflect.Array:
		var out reflect.Value
		if ti.t.Kind() == reflect.Slice {
			if v.IsNil() {
				return reflect.Zero(ti.mirror), nil
			}
			out = reflect.MakeSlice(ti.mirror, v.Len(), v.Len())
		} else {
			out = reflect.New(ti.mirror).Elem()
		}
		for i := range v.Len() {
			m, err := e.toMirror(v.Index(i), ti.elem)
			if err != nil {
				return reflect.Value{}, err
			}
			out.Index(i).Set(m)
		}
		return out, nil
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(ti.mirror), nil
		}
		out := reflect.MakeMapWithSize(ti.mirror, v.Len())
		it := v.MapRange()
		for it.Next() {
			m, err := e.toMirror(it.Value(), ti.elem)
			if err != nil {
				return reflect.Value{}, err
			}
			out.SetMapIndex(it.Key(), m)
		}
		return out, nil
	case reflect.Struct:
		out := reflect.New(ti.mirror).Elem()
		for i, f := range ti.fields {
			m, err := e.toMirror(v.Field(f.index), f.info)
			if err != nil {
				return reflect.Value{}, fmt.Errorf("field %s.%s: %w", ti.t, ti.t.Field(f.index).Name, err)
			}
			out.Field(i).Set(m)
		}
		return out, nil
	}
	return v, nil
}

// Encoding is a value prepared for the zero-copy format: its size is known
// before any byte is written, so the runtime can create a shared-memory
// object of exactly that size and encode straight into it.
type Encoding struct {
	header []byte
	data   uint64 // offset of the data section
	size   uint64
	bufs   []rawBuf
	keep   any // keeps the encoded value (and so its arrays) alive
}

// Prepare checks v and encodes its header. The arrays are not copied until
// EncodeTo; v must not change in between.
func Prepare(v any) (*Encoding, error) {
	rv := reflect.ValueOf(v)
	var e encoder
	var mv reflect.Value
	if rv.IsValid() {
		ti := infoOf(rv.Type())
		if ti.err != nil {
			return nil, ti.err
		}
		var err error
		if mv, err = e.toMirror(rv, ti); err != nil {
			return nil, fmt.Errorf("codec: encoding %T: %w", v, err)
		}
	}
	var hv any
	if mv.IsValid() {
		hv = mv.Interface()
	}
	h, err := zcEnc.Marshal(hv)
	if err != nil {
		return nil, fmt.Errorf("codec: encoding %T: %w", v, err)
	}
	if uint64(len(h)) > 1<<32-1 {
		return nil, fmt.Errorf("codec: encoding %T: header of %d bytes exceeds 4 GiB; put the large parts in numeric slices", v, len(h))
	}
	enc := &Encoding{header: h, bufs: e.bufs, keep: v}
	if len(e.bufs) == 0 {
		enc.data = prefixLen + uint64(len(h))
		enc.size = enc.data
	} else {
		enc.data = align(prefixLen + uint64(len(h)))
		enc.size = enc.data + e.off
	}
	return enc, nil
}

// Size is the number of bytes EncodeTo writes.
func (enc *Encoding) Size() int { return int(enc.size) }

// EncodeTo writes the encoding into dst, which must hold Size bytes, and
// returns Size. For the arrays to be zero-copy when decoded, dst should be
// 64-byte aligned (a shared-memory mapping is page aligned).
func (enc *Encoding) EncodeTo(dst []byte) (int, error) {
	if uint64(len(dst)) < enc.size {
		return 0, fmt.Errorf("codec: destination of %d bytes is too small for %d", len(dst), enc.size)
	}
	copy(dst, magic)
	binary.LittleEndian.PutUint32(dst[8:], uint32(len(enc.header)))
	binary.LittleEndian.PutUint32(dst[12:], 0)
	n := copy(dst[prefixLen:], enc.header)
	clear(dst[prefixLen+n : enc.data])
	for _, b := range enc.bufs {
		start := enc.data + b.off
		copy(dst[start:], unsafe.Slice((*byte)(b.p), b.n))
		clear(dst[start+uint64(b.n) : start+align(uint64(b.n))])
	}
	return int(enc.size), nil
}

// EncodedSize returns the size of v in the zero-copy format. To encode too,
// use Prepare once rather than EncodedSize then EncodeTo.
func EncodedSize(v any) (int, error) {
	enc, err := Prepare(v)
	if err != nil {
		return 0, err
	}
	return enc.Size(), nil
}

// EncodeTo encodes v in the zero-copy format into dst and returns the
// number of bytes written.
func EncodeTo(dst []byte, v any) (int, error) {
	enc, err := Prepare(v)
	if err != nil {
		return 0, err
	}
	return enc.EncodeTo(dst)
}

// Encode returns v in the zero-copy format in a new 64-byte aligned buffer.
func Encode(v any) ([]byte, error) {
	enc, err := Prepare(v)
	if err != nil {
		return nil, err
	}
	buf := AlignedBytes(enc.Size())
	_, err = enc.EncodeTo(buf)
	return buf, err
}

// AlignedBytes returns a zeroed slice of n bytes whose first byte is 64-byte
// aligned.
func AlignedBytes(n int) []byte {
	b := make([]byte, n+Align)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (Align - 1))
	return b[off : off+n : off+n]
}

// ErrCorrupt is wrapped by decoding errors caused by malformed input.
var ErrCorrupt = errors.New("codec: corrupt zero-copy encoding")

// DecodeZeroCopy decodes buf, made by EncodeTo, into the value v points to.
// Numeric slices ([]float32, []float64, []int32, []int64, []uint8, also
// inside structs, maps, slices and interfaces) point into buf without a copy
// when buf is suitably aligned (always, for a store mapping): they are
// read-only when buf is a store mapping and valid only while it is mapped.
// Copy before writing or keeping them past the mapping's life. Their
// capacity equals their length, so append copies.
func DecodeZeroCopy(buf []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("codec: DecodeZeroCopy needs a non-nil pointer, got %T", v)
	}
	if len(buf) < prefixLen || string(buf[:8]) != magic {
		return fmt.Errorf("%w: missing the GRAYZC magic (was it made by codec.EncodeTo?)", ErrCorrupt)
	}
	h := uint64(binary.LittleEndian.Uint32(buf[8:]))
	if prefixLen+h > uint64(len(buf)) {
		return fmt.Errorf("%w: header of %d bytes overruns the %d-byte buffer", ErrCorrupt, h, len(buf))
	}
	data := buf[min(align(prefixLen+h), uint64(len(buf))):]
	ti := infoOf(rv.Type().Elem())
	mv := reflect.New(ti.mirror)
	if err := zcDec.Unmarshal(buf[prefixLen:prefixLen+h], mv.Interface()); err != nil {
		return fmt.Errorf("codec: decoding %T: %w", v, err)
	}
	d := decoder{data: data}
	out, err := d.fromMirror(mv.Elem(), ti)
	if err != nil {
		return fmt.Errorf("codec: decoding %T: %w", v, err)
	}
	rv.Elem().Set(out)
	return nil
}

type decoder struct {
	data  []byte
	depth int
}

// slice returns the array ref points to as a []elem of type t (or of the
// ref's own kind when t is nil), pointing into the data section.
func (d *decoder) slice(ref *arrayRef, t reflect.Type) (reflect.Value, error) {
	sz := ref.Kind.size()
	if sz == 0 {
		return reflect.Value{}, fmt.Errorf("%w: unknown array kind %d", ErrCorrupt, ref.Kind)
	}
	if t == nil {
		t = reflect.SliceOf(ref.Kind.goType())
	} else if kindOf(t.Elem()) != ref.Kind {
		return reflect.Value{}, fmt.Errorf("%w: stored array of kind %d cannot be decoded into %s", ErrCorrupt, ref.Kind, t)
	}
	if ref.Len == 0 {
		return reflect.MakeSlice(t, 0, 0), nil
	}
	dl := uint64(len(d.data))
	if ref.Off%Align != 0 || ref.Off > dl || ref.Len > (dl-ref.Off)/uint64(sz) {
		return reflect.Value{}, fmt.Errorf("%w: array of %d elements at offset %d does not fit the %d-byte data section", ErrCorrupt, ref.Len, ref.Off, dl)
	}
	p := unsafe.Pointer(&d.data[ref.Off])
	n := int(ref.Len)
	if uintptr(p)%uintptr(sz) != 0 {
		// A misaligned buffer (not from the store): copy rather than make
		// a misaligned slice.
		s := reflect.MakeSlice(t, n, n)
		copy(unsafe.Slice((*byte)(s.UnsafePointer()), n*sz), d.data[ref.Off:])
		return s, nil
	}
	return reflect.SliceAt(t.Elem(), p, n).Convert(t), nil
}

func (d *decoder) fromMirror(mv reflect.Value, ti *typeInfo) (reflect.Value, error) {
	if !ti.walk {
		return mv, nil
	}
	if ti.kind != 0 {
		if mv.IsNil() {
			return reflect.Zero(ti.t), nil
		}
		return d.slice(mv.Interface().(*arrayRef), ti.t)
	}
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxNesting {
		return reflect.Value{}, fmt.Errorf("%w: nested more than %d levels", ErrCorrupt, maxNesting)
	}
	switch ti.t.Kind() {
	case reflect.Interface:
		if mv.IsNil() {
			return reflect.Zero(ti.t), nil
		}
		g, err := d.generic(mv.Elem().Interface())
		if err != nil {
			return reflect.Value{}, err
		}
		out := reflect.New(ti.t).Elem()
		if g != nil {
			gv := reflect.ValueOf(g)
			if !gv.Type().AssignableTo(ti.t) {
				return reflect.Value{}, fmt.Errorf("%w: %s is not assignable to %s", ErrCorrupt, gv.Type(), ti.t)
			}
			out.Set(gv)
		}
		return out, nil
	case reflect.Pointer:
		if mv.IsNil() {
			return reflect.Zero(ti.t), nil
		}
		x, err := d.fromMirror(mv.Elem(), ti.elem)
		if err != nil {
			return reflect.Value{}, err
		}
		out := reflect.New(ti.t.Elem())
		out.Elem().Set(x)
		return out, nil
	case reflect.Slice, reflect.Array:
		var out reflect.Value
		if ti.t.Kind() == reflect.Slice {
			if mv.IsNil() {
				return reflect.Zero(ti.t), nil
			}
			out = reflect.MakeSlice(ti.t, mv.Len(), mv.Len())
		} else {
			out = reflect.New(ti.t).Elem()
		}
		for i := range mv.Len() {
			x, err := d.fromMirror(mv.Index(i), ti.elem)
			if err != nil {
				return reflect.Value{}, err
			}
			out.Index(i).Set(x)
		}
		return out, nil
	case reflect.Map:
		if mv.IsNil() {
			return reflect.Zero(ti.t), nil
		}
		out := reflect.MakeMapWithSize(ti.t, mv.Len())
		it := mv.MapRange()
		for it.Next() {
			x, err := d.fromMirror(it.Value(), ti.elem)
			if err != nil {
				return reflect.Value{}, err
			}
			out.SetMapIndex(it.Key(), x)
		}
		return out, nil
	case reflect.Struct:
		out := reflect.New(ti.t).Elem()
		for i, f := range ti.fields {
			x, err := d.fromMirror(mv.Field(i), f.info)
			if err != nil {
				return reflect.Value{}, err
			}
			out.Field(f.index).Set(x)
		}
		return out, nil
	}
	return mv, nil
}

// generic replaces placeholders in a value decoded into an interface (nil,
// scalars, []any, map[any]any, arrayRef) with slices of the stored kind.
func (d *decoder) generic(x any) (any, error) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxNesting {
		return nil, fmt.Errorf("%w: nested more than %d levels", ErrCorrupt, maxNesting)
	}
	switch g := x.(type) {
	case arrayRef:
		s, err := d.slice(&g, nil)
		if err != nil {
			return nil, err
		}
		return s.Interface(), nil
	case *arrayRef:
		s, err := d.slice(g, nil)
		if err != nil {
			return nil, err
		}
		return s.Interface(), nil
	case []any:
		for i, e := range g {
			r, err := d.generic(e)
			if err != nil {
				return nil, err
			}
			g[i] = r
		}
	case map[any]any:
		for k, e := range g {
			r, err := d.generic(e)
			if err != nil {
				return nil, err
			}
			g[k] = r
		}
	}
	return x, nil
}

// IsZeroCopy reports whether data is in the zero-copy format (made by
// EncodeTo) rather than plain CBOR (made by Marshal). The two cannot be
// confused: a CBOR item starting with the 8-byte magic is a 7-byte byte
// string and ends there, while the zero-copy format is at least 16 bytes.
func IsZeroCopy(data []byte) bool {
	return len(data) >= prefixLen && string(data[:8]) == magic
}
