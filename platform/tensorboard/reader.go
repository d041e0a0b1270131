package tensorboard

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
)

// Event is one decoded event: the file-version event has FileVersion set,
// scalar events have Step and Scalars.
type Event struct {
	WallTime    float64
	Step        int64
	FileVersion string
	Scalars     map[string]float32
}

// ReadFile decodes every event of an event file, checking both checksums
// of each record. Fields other than scalars are skipped. A record cut
// short at the end of the file (a writer killed mid-write) is an error that
// says so, returned with the events before it.
func ReadFile(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	var events []Event
	_, err = eachRecord(b, func(_ int, ev Event) bool {
		events = append(events, ev)
		return true
	})
	if err != nil {
		return events, fmt.Errorf("tensorboard: %s: %w", path, err)
	}
	return events, nil
}

// eachRecord decodes the records of an event file's bytes in turn, calling
// fn with each one's offset and event until fn returns false. It returns
// the offset where it stopped: the end of the last whole record read, or
// the offset of the record fn declined.
func eachRecord(b []byte, fn func(off int, ev Event) bool) (int, error) {
	off := 0
	for off < len(b) {
		if len(b)-off < 12 {
			return off, fmt.Errorf("record at byte %d: %w", off, io.ErrUnexpectedEOF)
		}
		n := binary.LittleEndian.Uint64(b[off:])
		if binary.LittleEndian.Uint32(b[off+8:]) != MaskedCRC(b[off:off+8]) {
			return off, fmt.Errorf("record at byte %d: length checksum mismatch", off)
		}
		if uint64(len(b)-off-16) < n {
			return off, fmt.Errorf("record at byte %d: %w", off, io.ErrUnexpectedEOF)
		}
		data := b[off+12 : off+12+int(n)]
		if binary.LittleEndian.Uint32(b[off+12+int(n):]) != MaskedCRC(data) {
			return off, fmt.Errorf("record at byte %d: data checksum mismatch", off)
		}
		ev, err := decodeEvent(data)
		if err != nil {
			return off, fmt.Errorf("record at byte %d: %w", off, err)
		}
		if !fn(off, ev) {
			return off, nil
		}
		off += 16 + int(n)
	}
	return off, nil
}

func decodeEvent(b []byte) (Event, error) {
	var ev Event
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			ev.WallTime = math.Float64frombits(x)
		case num == eventStep && typ == protowire.VarintType:
			ev.Step = int64(x)
		case num == eventFileVersion && typ == protowire.BytesType:
			ev.FileVersion = string(v)
		case num == eventSummary && typ == protowire.BytesType:
			ev.Scalars = map[string]float32{}
			return eachField(v, func(num protowire.Number, typ protowire.Type, val []byte, _ uint64) error {
				if num != summaryValue || typ != protowire.BytesType {
					return nil
				}
				var tag string
				var f float32
				var has bool
				err := eachField(val, func(num protowire.Number, typ protowire.Type, s []byte, x uint64) error {
					switch {
					case num == valueTag && typ == protowire.BytesType:
						tag = string(s)
					case num == valueSimpleValue && typ == protowire.Fixed32Type:
						f, has = math.Float32frombits(uint32(x)), true
					}
					return nil
				})
				if err == nil && has {
					ev.Scalars[tag] = f
				}
				return err
			})
		}
		return nil
	})
	return ev, err
}

// eachField calls fn for every field of a protobuf message: bytes fields
// get their contents in v, scalar fields their raw value in x.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
