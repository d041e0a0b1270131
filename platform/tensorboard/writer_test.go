package tensorboard

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// event is what the test's own reader makes of one tensorflow.Event.
type event struct {
	wallTime    float64
	step        int64
	fileVersion string
	scalars     map[string]float32
}

// readRecords parses TFRecord framing independently of the writer (its own
// CRC computation) and checks both checksums of every record.
func readRecords(t *testing.T, b []byte) [][]byte {
	t.Helper()
	table := crc32.MakeTable(crc32.Castagnoli)
	mask := func(p []byte) uint32 {
		c := crc32.Checksum(p, table)
		return ((c >> 15) | (c << 17)) + 0xa282ead8
	}
	var recs [][]byte
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("truncated record header: %d bytes left", len(b))
		}
		n := binary.LittleEndian.Uint64(b[:8])
		if got, want := binary.LittleEndian.Uint32(b[8:12]), mask(b[:8]); got != want {
			t.Fatalf("length CRC %#x, want %#x", got, want)
		}
		if uint64(len(b)-16) < n {
			t.Fatalf("truncated record: length %d, %d bytes left", n, len(b)-16)
		}
		data := b[12 : 12+n]
		if got, want := binary.LittleEndian.Uint32(b[12+n:16+n]), mask(data); got != want {
			t.Fatalf("data CRC %#x, want %#x", got, want)
		}
		recs = append(recs, data)
		b = b[16+n:]
	}
	return recs
}

func parseEvent(t *testing.T, b []byte) event {
	t.Helper()
	ev := event{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			v, m := protowire.ConsumeFixed64(b)
			ev.wallTime, n = math.Float64frombits(v), m
		case num == 2 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			ev.step, n = int64(v), m
		case num == 3 && typ == protowire.BytesType:
			v, m := protowire.ConsumeString(b)
			ev.fileVersion, n = v, m
		case num == 5 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			ev.scalars, n = parseSummary(t, v), m
		default:
			t.Fatalf("unexpected field %d of type %d", num, typ)
		}
		if n < 0 {
			t.Fatalf("bad field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return ev
}

func parseSummary(t *testing.T, b []byte) map[string]float32 {
	out := map[string]float32{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if num != 1 || typ != protowire.BytesType {
			t.Fatalf("Summary: unexpected field %d type %d", num, typ)
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			t.Fatalf("Summary.value: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var tag string
		var val float32
		for len(v) > 0 {
			num, typ, n := protowire.ConsumeTag(v)
			v = v[n:]
			switch {
			case num == 1 && typ == protowire.BytesType:
				tag, n = protowire.ConsumeString(v)
			case num == 2 && typ == protowire.Fixed32Type:
				var bits uint32
				bits, n = protowire.ConsumeFixed32(v)
				val = math.Float32frombits(bits)
			default:
				t.Fatalf("Summary.Value: unexpected field %d type %d", num, typ)
			}
			if n < 0 {
				t.Fatalf("Summary.Value field %d: %v", num, protowire.ParseError(n))
			}
			v = v[n:]
		}
		out[tag] = val
	}
	return out
}

func writeSample(t *testing.T) (string, time.Time) {
	t.Helper()
	dir := t.TempDir()
	w, err := NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Unix(1700000000, 500_000_000)
	if err := w.AddScalars(4000, wall, map[string]float64{"episode_reward_mean": 21.5, "info/learner/kl": 0.01}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddScalars(8000, wall.Add(time.Second), map[string]float64{"episode_reward_mean": 37.25}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.Path(), wall
}

func TestEventFileDecodesIndependently(t *testing.T) {
	path, wall := writeSample(t)
	host, _ := os.Hostname()
	base := filepath.Base(path)
	if !strings.HasPrefix(base, "events.out.tfevents.") || !strings.HasSuffix(base, "."+host) {
		t.Errorf("file name %q, want events.out.tfevents.<unix>.%s", base, host)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, b)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3 (version + 2 scalars)", len(recs))
	}
	first := parseEvent(t, recs[0])
	if first.fileVersion != "brain.Event:2" || first.wallTime == 0 || first.scalars != nil {
		t.Errorf("first event = %+v, want file_version brain.Event:2 with a wall time", first)
	}
	want := []event{
		{wallTime: 1700000000.5, step: 4000, scalars: map[string]float32{"episode_reward_mean": 21.5, "info/learner/kl": 0.01}},
		{wallTime: 1700000001.5, step: 8000, scalars: map[string]float32{"episode_reward_mean": 37.25}},
	}
	_ = wall
	for i, w := range want {
		got := parseEvent(t, recs[i+1])
		if got.step != w.step || math.Abs(got.wallTime-w.wallTime) > 1e-6 || fmt.Sprint(got.scalars) != fmt.Sprint(w.scalars) {
			t.Errorf("event %d = %+v, want %+v", i+1, got, w)
		}
	}
}

// TestEventFileProtocDecodeRaw has protoc, an independent protobuf parser,
// decode every record.
func TestEventFileProtocDecodeRaw(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc not on PATH: install protobuf-compiler (`make deps`) to check the event file with protoc --decode_raw")
	}
	path, _ := writeSample(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, b)
	var outs []string
	for _, r := range recs {
		cmd := exec.Command(protoc, "--decode_raw")
		cmd.Stdin = bytes.NewReader(r)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("protoc --decode_raw: %v\n%s", err, out)
		}
		outs = append(outs, string(out))
	}
	if !strings.Contains(outs[0], `3: "brain.Event:2"`) {
		t.Errorf("first record decodes to\n%s\nwant field 3 = brain.Event:2", outs[0])
	}
	for _, want := range []string{"2: 4000", `1: "episode_reward_mean"`, `1: "info/learner/kl"`, "5 {"} {
		if !strings.Contains(outs[1], want) {
			t.Errorf("second record decodes to\n%s\nwant it to contain %q", outs[1], want)
		}
	}
	// protoc prints fixed32 fields as hex; 21.5 as a float32 is 0x41ac0000.
	if !strings.Contains(outs[1], "2: 0x41ac0000") {
		t.Errorf("second record decodes to\n%s\nwant simple_value 21.5 (0x41ac0000)", outs[1])
	}
}

func TestMaskedCRCKnownValue(t *testing.T) {
	// CRC32C("123456789") is 0xe3069283, a published check value; the mask
	// is applied by hand here.
	c := uint32(0xe3069283)
	if got, want := MaskedCRC([]byte("123456789")), ((c>>15)|(c<<17))+0xa282ead8; got != want {
		t.Errorf("MaskedCRC = %#x, want %#x", got, want)
	}
}

func TestWriteAfterClose(t *testing.T) {
	w, err := NewWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := w.AddScalars(1, time.Now(), map[string]float64{"x": 1}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("AddScalars after Close: %v, want an error saying the writer is closed", err)
	}
}

func BenchmarkAddScalars(b *testing.B) {
	w, err := NewWriter(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	s := map[string]float64{}
	for i := range 30 {
		s[fmt.Sprintf("info/learner/stat_%02d", i)] = float64(i)
	}
	now := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := w.AddScalars(int64(i), now, s); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReadFileMatchesIndependentReader(t *testing.T) {
	path, _ := writeSample(t)
	events, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || events[0].FileVersion != FileVersion || events[2].Step != 8000 ||
		events[1].Scalars["info/learner/kl"] != float32(0.01) {
		t.Errorf("ReadFile = %+v", events)
	}
	// A record cut short by a kill is reported, with the events before it.
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	events, err = ReadFile(path)
	if err == nil || len(events) != 2 {
		t.Errorf("truncated file: %d events, err %v; want 2 events and an error", len(events), err)
	}
}
