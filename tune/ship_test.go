package tune

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// dirDigest hashes the relative paths and contents of the files under dir.
func dirDigest(dir string) (string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// filesTrainable writes a checkpoint of several files (one of them 1 MiB,
// in a subfolder too) and a notes file in its run folder, and reports the
// digest of the checkpoint it was restored from.
type filesTrainable struct {
	dir      string
	seed     int64
	steps    int
	restored string
}

func (f *filesTrainable) Setup(_ context.Context, cfg map[string]any, dir string) error {
	s, _ := Int(cfg, "seed")
	f.dir, f.seed = dir, int64(s)
	return nil
}

func (f *filesTrainable) Step(context.Context) (map[string]any, error) {
	f.steps++
	nf, err := os.OpenFile(filepath.Join(f.dir, "notes.txt"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(nf, "step %d\n", f.steps)
	if err := nf.Close(); err != nil {
		return nil, err
	}
	return map[string]any{"steps": f.steps, "restored": f.restored, "pid": os.Getpid()}, nil
}

func (f *filesTrainable) Save(_ context.Context, dir string) error {
	big := make([]byte, 1<<20)
	rand.New(rand.NewSource(f.seed + int64(f.steps))).Read(big)
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), big, 0o600); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub", "empty"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sub", "meta.json"), []byte(fmt.Sprintf(`{"steps": %d}`, f.steps)), 0o644)
}

func (f *filesTrainable) Restore(_ context.Context, dir string) error {
	d, err := dirDigest(dir)
	f.restored = d
	return err
}

func (f *filesTrainable) Stop() error { return nil }

func init() {
	RegisterTrainable("tune.test-files", func(map[string]any) (Trainable, error) { return &filesTrainable{}, nil })
}

// A checkpoint saved by a trial's actor lands, file for file, in the
// folder the runner gave on the driver; restored into another actor, it
// arrives there unchanged; and the files the trainable wrote into its run
// folder on the actor's node are copied into the trial's folder.
func TestCheckpointShipsBetweenActors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts gray worker processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	defer gray.Shutdown()
	tmp := t.TempDir()
	trialA, trialB, ckpt := filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "a", "checkpoint_000002")
	for _, d := range []string{trialA, trialB, ckpt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := map[string]any{"seed": 7}
	a := placed(RemoteTrainable("tune.test-files", nil)(), true, Resources{CPU: 1})
	if err := a.Setup(ctx, cfg, trialA); err != nil {
		t.Fatal(err)
	}
	var pidA float64
	for i := 0; i < 2; i++ {
		r, err := a.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pidA, _ = toFloat(r["pid"])
	}
	// A collection between the reply and its unpacking, and the
	// finalizers it queued (a window's unmapping among them) run: the
	// reply's bytes, read from shared memory, must stay mapped.
	afterSaveReply = func() {
		if !collectAndFinalize(10 * time.Second) {
			t.Error("the finalizers queued by a collection did not run")
		}
	}
	defer func() { afterSaveReply = nil }()
	if err := a.Save(ctx, ckpt); err != nil {
		t.Fatal(err)
	}
	// What the trainable wrote, made here the same way.
	want := t.TempDir()
	if err := (&filesTrainable{seed: 7, steps: 2}).Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	wantDigest, _ := dirDigest(want)
	if got, err := dirDigest(ckpt); err != nil || got != wantDigest {
		t.Fatalf("checkpoint on the driver: digest %s (%v), want %s", got, err, wantDigest)
	}
	if _, err := os.Stat(filepath.Join(ckpt, "sub", "empty")); err != nil {
		t.Errorf("an empty folder of the checkpoint did not arrive: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(trialA, "notes.txt")); string(b) != "step 1\nstep 2\n" {
		t.Errorf("run-folder file after the checkpoint: %q", b)
	}
	if _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(trialA, "notes.txt")); string(b) != "step 1\nstep 2\nstep 3\n" {
		t.Errorf("run-folder file after Stop: %q", b)
	}
	// The stopped trial's actor is gone.
	if _, err := a.Step(ctx); !errors.Is(err, gray.ErrActorDead) {
		t.Errorf("Step after Stop: %v, want ErrActorDead", err)
	}

	b := placed(RemoteTrainable("tune.test-files", nil)(), true, Resources{CPU: 1})
	if err := b.Setup(ctx, cfg, trialB); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if err := b.Restore(ctx, ckpt); err != nil {
		t.Fatal(err)
	}
	r, err := b.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r["restored"] != wantDigest {
		t.Errorf("the actor restored a checkpoint with digest %v, want %s", r["restored"], wantDigest)
	}
	if pid, _ := toFloat(r["pid"]); pid == pidA || int(pid) == os.Getpid() {
		t.Errorf("restored in pid %v: want another actor process than the saver's (%v) and the driver's", pid, pidA)
	}
}

// Archives round-trip files, folders and permissions, and an entry that
// would land outside the target folder is refused.
func TestPackUnpack(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"a.txt": "alpha", "d/e/f.bin": strings.Repeat("x", 70000), "d/g": ""}
	for n, c := range files {
		p := filepath.Join(src, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	b, err := packDir(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "new")
	if err := unpackDir(b, dst); err != nil {
		t.Fatal(err)
	}
	ws, _ := dirDigest(src)
	if gs, _ := dirDigest(dst); gs != ws {
		t.Errorf("unpacked digest %s, want %s", gs, ws)
	}
	if st, err := os.Stat(filepath.Join(dst, "a.txt")); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode of a.txt: %v %v", st.Mode(), err)
	}

	for _, name := range []string{"../escape", "/abs", "a/../../escape"} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 1, Mode: 0o644})
		tw.Write([]byte("x"))
		tw.Close()
		err := unpackDir(buf.Bytes(), filepath.Join(t.TempDir(), "t"))
		if err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("entry %q: %v, want a refusal", name, err)
		}
	}
	if err := unpackDir([]byte("not a tar archive at all, but long enough to be read as a header block"), t.TempDir()); err == nil {
		t.Error("a damaged archive unpacked without error")
	}
}

// The changes dirSync packs are the new and changed files only.
func TestDirSyncSendsChanges(t *testing.T) {
	dir := t.TempDir()
	s := dirSync{dir: dir}
	write := func(n, c string) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := func(b []byte) []string {
		var out []string
		tr := tar.NewReader(bytes.NewReader(b))
		for {
			h, err := tr.Next()
			if err != nil {
				return out
			}
			if h.Typeflag == tar.TypeReg {
				out = append(out, h.Name)
			}
		}
	}
	write("a", "1")
	write("b", "2")
	b, err := s.changes()
	if err != nil || fmt.Sprint(names(b)) != "[a b]" {
		t.Fatalf("first sync: %v %v", names(b), err)
	}
	if b, _ := s.changes(); b != nil {
		t.Errorf("nothing changed, yet it sent %v", names(b))
	}
	write("b", "22")
	write("c", "3")
	if b, _ := s.changes(); fmt.Sprint(names(b)) != "[b c]" {
		t.Errorf("second sync sent %v, want [b c]", names(b))
	}
}

// collectAndFinalize runs a garbage collection and waits until the
// finalizers it queued have run, or d passed (then it reports false). The
// finalizer goroutine takes what is queued as one batch and runs all of it
// before it takes the next; so once a sentinel queued after the previous
// round's sentinel ran has run too, the batch that held the rest of the
// first collection's finalizers is done. Three rounds cover a first
// collection's queue split over two batches.
func collectAndFinalize(d time.Duration) bool {
	timeout := time.After(d)
	for range 3 {
		done := make(chan struct{})
		sentinel := new([64]byte) // large enough not to share a tiny block
		runtime.SetFinalizer(sentinel, func(*[64]byte) { close(done) })
		sentinel = nil
		runtime.GC()
		select {
		case <-done:
		case <-timeout:
			return false
		}
	}
	return true
}
