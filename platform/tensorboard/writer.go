// Package tensorboard writes TensorBoard event files: TFRecord-framed
// tensorflow.Event protocol buffers holding scalar summaries, readable by
// TensorBoard itself.
//
// The messages are encoded by hand with protowire rather than through
// generated code: the platform needs four fields of two messages, and
// hand-encoding keeps TensorFlow's .proto files out of the module.
package tensorboard

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// FileVersion is the file_version of the first event of every file; it tells
// TensorBoard the file's Event encoding.
const FileVersion = "brain.Event:2"

// Field numbers of tensorflow.Event, tensorflow.Summary and
// tensorflow.Summary.Value (tensorflow/core/util/event.proto and
// tensorflow/core/framework/summary.proto).
const (
	eventWallTime    protowire.Number = 1 // double
	eventStep        protowire.Number = 2 // int64
	eventFileVersion protowire.Number = 3 // string
	eventSummary     protowire.Number = 5 // Summary
	summaryValue     protowire.Number = 1 // repeated Summary.Value
	valueTag         protowire.Number = 1 // string
	valueSimpleValue protowire.Number = 2 // float
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC is TFRecord's masked CRC32C: the checksum rotated right by 15
// bits plus a constant, so that a CRC of data that itself holds CRCs does not
// degenerate.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// Writer appends scalar events to one event file. Each event is written with
// one write call, so a process killed between events leaves a file whose
// every record is whole. A Writer is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	path string
	buf  []byte
}

// NewWriter creates dir (if needed) and a new event file in it named
// events.out.tfevents.<unix seconds>.<hostname>, and writes the file-version
// event.
func NewWriter(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tensorboard: creating %s: %w", dir, err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	now := time.Now()
	path := filepath.Join(dir, fmt.Sprintf("events.out.tfevents.%d.%s", now.Unix(), host))
	// O_EXCL: two writers started in the same second in the same folder
	// must not interleave records in one file.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	for i := 1; err != nil && os.IsExist(err) && i < 100; i++ {
		path = filepath.Join(dir, fmt.Sprintf("events.out.tfevents.%d.%s.%d", now.Unix(), host, i))
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("tensorboard: creating event file: %w", err)
	}
	w := &Writer{f: f, path: path}
	var ev []byte
	ev = protowire.AppendTag(ev, eventWallTime, protowire.Fixed64Type)
	ev = protowire.AppendFixed64(ev, math.Float64bits(wallTime(now)))
	ev = protowire.AppendTag(ev, eventFileVersion, protowire.BytesType)
	ev = protowire.AppendString(ev, FileVersion)
	if err := w.writeRecord(ev); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the event file's path.
func (w *Writer) Path() string { return w.path }

// AddScalars writes one event at step holding one scalar per entry of
// scalars, tagged with its key. Tags are written in sorted order so that
// equal inputs give equal files.
func (w *Writer) AddScalars(step int64, wall time.Time, scalars map[string]float64) error {
	tags := make([]string, 0, len(scalars))
	for t := range scalars {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	var summary, value []byte
	for _, t := range tags {
		value = value[:0]
		value = protowire.AppendTag(value, valueTag, protowire.BytesType)
		value = protowire.AppendString(value, t)
		value = protowire.AppendTag(value, valueSimpleValue, protowire.Fixed32Type)
		value = protowire.AppendFixed32(value, math.Float32bits(float32(scalars[t])))
		summary = protowire.AppendTag(summary, summaryValue, protowire.BytesType)
		summary = protowire.AppendBytes(summary, value)
	}
	var ev []byte
	ev = protowire.AppendTag(ev, eventWallTime, protowire.Fixed64Type)
	ev = protowire.AppendFixed64(ev, math.Float64bits(wallTime(wall)))
	ev = protowire.AppendTag(ev, eventStep, protowire.VarintType)
	ev = protowire.AppendVarint(ev, uint64(step))
	ev = protowire.AppendTag(ev, eventSummary, protowire.BytesType)
	ev = protowire.AppendBytes(ev, summary)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeRecord(ev)
}

// writeRecord frames data as one TFRecord: length, masked CRC of the
// length, data, masked CRC of the data.
func (w *Writer) writeRecord(data []byte) error {
	if w.f == nil {
		return fmt.Errorf("tensorboard: write to closed writer %s", w.path)
	}
	b := w.buf[:0]
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	b = binary.LittleEndian.AppendUint32(b, MaskedCRC(b[:8]))
	b = append(b, data...)
	b = binary.LittleEndian.AppendUint32(b, MaskedCRC(data))
	w.buf = b
	if _, err := w.f.Write(b); err != nil {
		return fmt.Errorf("tensorboard: writing %s: %w", w.path, err)
	}
	return nil
}

// Sync flushes the file to stable storage.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	return w.f.Sync()
}

// Close closes the file. Closing twice is harmless.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return fmt.Errorf("tensorboard: closing %s: %w", w.path, err)
	}
	return nil
}

func wallTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
