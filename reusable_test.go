package gray_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// Env stands in for a simulator: state that tasks mutate.
type Env struct {
	Steps int
	Made  int
}

var (
	made     int // per process: how many times the initializer ran
	envPlain = gray.Reusable("test.envPlain", func() (*Env, error) {
		made++
		return &Env{Made: made}, nil
	}, nil)
	envReset = gray.Reusable("test.envReset", func() (*Env, error) { return &Env{}, nil }, func(e *Env) (*Env, error) {
		e.Steps = 0
		return e, nil
	})
	stepPlain = gray.Func0x2("test.stepPlain", func(ctx context.Context) (int, int, error) {
		e, err := envPlain.Get(ctx)
		if err != nil {
			return 0, 0, err
		}
		e.Steps++
		return e.Steps, e.Made, nil
	}, gray.CPUs(1))
	stepReset = gray.Func0("test.stepReset", func(ctx context.Context) (int, error) {
		e, err := envReset.Get(ctx)
		if err != nil {
			return 0, err
		}
		e.Steps++
		return e.Steps, nil
	})
	hello = gray.Func1("test.hello", func(ctx context.Context, s string) (int, error) {
		os.Stdout.WriteString(s + "\n")
		return len(s), nil
	})
)

func TestReusables(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 1})
	lastMade := 0
	for range 4 {
		steps, m := stepPlain.Remote()
		s, err := gray.Get(ctx, steps)
		if err != nil {
			t.Fatal(err)
		}
		mv, _ := gray.Get(ctx, m)
		// Without a reinitializer, every use starts from a fresh value.
		if s != 1 || mv <= lastMade {
			t.Fatalf("without reinitializer: steps %d, made %d after %d", s, mv, lastMade)
		}
		lastMade = mv
	}
	for range 4 {
		if s, err := gray.Get(ctx, stepReset.Remote()); err != nil || s != 1 {
			t.Fatalf("with reinitializer: steps %d, %v", s, err)
		}
	}
}

func TestWorkerOutputToFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := start(t, gray.Options{NumCPUs: 1, LogDir: dir})
	if _, err := gray.Get(ctx, hello.Remote("hello from a worker")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "worker-*.out"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if strings.Contains(string(b), "hello from a worker") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no worker-*.out in %s holds the task's output (files %v)", dir, files)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
