package tune

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gray-ml/gray"
)

// sizedTrainable saves a checkpoint of one file of size bytes and reads it
// back on Restore.
type sizedTrainable struct{ size int }

func (s *sizedTrainable) Setup(context.Context, map[string]any, string) error { return nil }
func (s *sizedTrainable) Step(context.Context) (map[string]any, error) {
	return map[string]any{}, nil
}
func (s *sizedTrainable) Save(_ context.Context, dir string) error {
	return os.WriteFile(filepath.Join(dir, "weights.bin"), make([]byte, s.size), 0o644)
}
func (s *sizedTrainable) Restore(_ context.Context, dir string) error {
	_, err := os.ReadFile(filepath.Join(dir, "weights.bin"))
	return err
}
func (s *sizedTrainable) Stop() error { return nil }

func init() {
	RegisterTrainable("tune.bench-sized", func(args map[string]any) (Trainable, error) {
		n, _ := toFloat(args["size"])
		return &sizedTrainable{size: int(n)}, nil
	})
}

// BenchmarkCheckpointShip measures a checkpoint's Save then Restore for a
// trial in an actor (packed on the actor's side, carried by gray, unpacked
// into the driver's folder, and back) beside the same trainable in this
// process (the files written and read where they are): what shipping
// checkpoints costs per checkpoint, on one machine.
//
//	go test -run '^$' -bench CheckpointShip -count 6 ./tune
func BenchmarkCheckpointShip(b *testing.B) {
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		b.Fatal(err)
	}
	defer gray.Shutdown()
	for _, size := range []int{64 << 10, 4 << 20, 32 << 20} {
		for _, where := range []string{"in-process", "actor"} {
			b.Run(fmt.Sprintf("size=%dKiB/%s", size>>10, where), func(b *testing.B) {
				var tr Trainable = &sizedTrainable{size: size}
				if where == "actor" {
					tr = placed(RemoteTrainable("tune.bench-sized", map[string]any{"size": size})(), true, Resources{CPU: 1})
				}
				dir := b.TempDir()
				if err := tr.Setup(ctx, nil, dir); err != nil {
					b.Fatal(err)
				}
				defer tr.Stop()
				b.SetBytes(int64(2 * size))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					ck := filepath.Join(dir, fmt.Sprintf("checkpoint_%06d", i))
					if err := os.MkdirAll(ck, 0o755); err != nil {
						b.Fatal(err)
					}
					if err := tr.Save(ctx, ck); err != nil {
						b.Fatal(err)
					}
					if err := tr.Restore(ctx, ck); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					os.RemoveAll(ck)
					b.StartTimer()
				}
			})
		}
	}
}
