package idx

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func encode(t *testing.T, a *Array) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, a); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gz(t *testing.T, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadRoundTrip(t *testing.T) {
	a := &Array{Dims: []int{3, 2, 2}, Data: []uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255}}
	raw := encode(t, a)
	for name, data := range map[string][]byte{"raw": raw, "gzip": gz(t, raw)} {
		t.Run(name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Dims, a.Dims) || !bytes.Equal(got.Data, a.Data) {
				t.Fatalf("got dims %v data %v, want %v %v", got.Dims, got.Data, a.Dims, a.Data)
			}
		})
	}
}

func TestReadBadInput(t *testing.T) {
	good := encode(t, &Array{Dims: []int{4, 3}, Data: make([]uint8, 12)})
	corruptGzip := gz(t, good)
	corruptGzip[len(corruptGzip)-6] ^= 0xff // the CRC-32 at the end
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated: file too short for the 4-byte IDX magic"},
		{"bad magic", []byte{1, 2, 8, 1, 0, 0, 0, 0}, "not an IDX file"},
		{"float elements", []byte{0, 0, 0x0d, 1, 0, 0, 0, 0}, "float32) is not supported"},
		{"unknown type", []byte{0, 0, 0x42, 1, 0, 0, 0, 0}, "unknown element type"},
		{"no dims", []byte{0, 0, 8, 0}, "zero dimensions"},
		{"header cut", good[:9], "the file ends inside the header, after 1 of its 2 dimensions"},
		{"data cut", good[:len(good)-5], "declares [4 3] = 12 bytes of data, the file holds 7"},
		{"gzip data cut", gz(t, good[:len(good)-1]), "the gzip data holds 11"},
		{"trailing bytes", append(slices.Clone(good), 1, 2), "2 unexpected bytes after the 12 bytes"},
		{"huge header", []byte{0, 0, 8, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "declare more than"},
		{"gzip checksum", corruptGzip, "corrupt gzip data after the declared data"},
		{"gzip body cut", gz(t, good)[:15], "truncated: the gzip data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestReadFileNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "labels-idx1-ubyte.gz")
	if err := WriteFile(path, &Array{Dims: []int{5}, Data: []uint8{1, 2, 3, 4, 5}}, true); err != nil {
		t.Fatal(err)
	}
	a, err := ReadFile(path)
	if err != nil || !slices.Equal(a.Data, []uint8{1, 2, 3, 4, 5}) {
		t.Fatalf("ReadFile = %v, %v", a, err)
	}
	bad := filepath.Join(dir, "bad")
	if err := WriteFile(bad, &Array{Dims: []int{1}, Data: []uint8{1}}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing file: %v", err)
	}
	if err := WriteFile(bad, &Array{Dims: []int{2}, Data: []uint8{1}}, false); err == nil {
		t.Fatal("Write accepted 1 element for dims [2]")
	}
}

func TestReadFileTruncatedNamesPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "imgs")
	if err := WriteFile(path, &Array{Dims: []int{2, 2}, Data: []uint8{1, 2, 3, 4}}, false); err != nil {
		t.Fatal(err)
	}
	raw := encode(t, &Array{Dims: []int{2, 2}, Data: []uint8{1, 2, 3, 4}})
	if err := writeBytes(path, raw[:len(raw)-1]); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("error %v should name %s and say truncated", err, path)
	}
}

func writeBytes(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

func TestReadNReadsAPrefix(t *testing.T) {
	a := &Array{Dims: []int{4, 2}, Data: []uint8{1, 2, 3, 4, 5, 6, 7, 8}}
	raw := encode(t, a)
	for name, data := range map[string][]byte{"raw": raw, "gzip": gz(t, raw)} {
		got, err := ReadN(bytes.NewReader(data), 3)
		if err != nil {
			t.Fatal(name, err)
		}
		if !slices.Equal(got.Dims, []int{3, 2}) || !bytes.Equal(got.Data, a.Data[:6]) || got.Declared != 4 {
			t.Fatalf("%s: ReadN(3) = %v %v declared %d", name, got.Dims, got.Data, got.Declared)
		}
		if got, err := ReadN(bytes.NewReader(data), 9); err != nil || got.Dims[0] != 4 {
			t.Fatalf("%s: ReadN(9) = %v, %v", name, got, err)
		}
	}
	if _, err := ReadN(bytes.NewReader(raw[:len(raw)-3]), 3); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("ReadN of a cut prefix: %v", err)
	}
}
