package machine

import (
	"os"
	"testing"
	"time"
)

func TestSamplerLooksAtMostEveryInterval(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat: not Linux")
	}
	s := &Sampler{Every: 5 * time.Second}
	t0 := time.Unix(1000, 0)
	if _, ok := s.Sample(t0); ok {
		t.Fatal("a sample from one look: a CPU share needs two")
	}
	// Burn some CPU so the share is above zero, then look again.
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
	}
	if _, ok := s.Sample(t0.Add(time.Second)); ok {
		t.Fatal("looked again before Every")
	}
	first, ok := s.Sample(t0.Add(5 * time.Second))
	if !ok {
		t.Fatal("no sample after Every")
	}
	if first.CPU < 0 || first.CPU > 1 || first.MemTotal <= 0 || first.MemUsed <= 0 || first.MemUsed > first.MemTotal {
		t.Errorf("sample out of range: %+v", first)
	}
	if first.T != t0.Add(5*time.Second).UnixMilli() {
		t.Errorf("sample time %d, want the look's", first.T)
	}
	again, _ := s.Sample(t0.Add(6 * time.Second))
	if again != first {
		t.Errorf("a second ask within Every gave %+v, want the same sample %+v", again, first)
	}
}
