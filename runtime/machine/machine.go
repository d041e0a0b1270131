// Package machine looks at the machine a process runs on: it samples its
// CPU and memory use from Linux's /proc, cheap enough for a node to send
// with its heartbeats and for a dashboard to keep an hour of (machine.go),
// and counts its NVIDIA GPUs through NVML, loaded at run time (gpu.go).
package machine

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// Sample is one look at a machine: when, the share of its CPU time that
// was busy since the look before, and its memory in use and in all.
type Sample struct {
	T        int64   `json:"t"`   // Unix milliseconds
	CPU      float64 `json:"cpu"` // busy share of all cores, 0 to 1
	MemUsed  float64 `json:"mem_used"`
	MemTotal float64 `json:"mem_total"` // bytes
}

// Sampler takes samples no more often than Every, however often it is
// asked: a heartbeat every 200 ms sends the same sample until the next
// is due. A CPU share needs two looks, so the first sample comes one
// Every after the first call. Safe for concurrent use.
type Sampler struct {
	Every time.Duration

	mu        sync.Mutex
	busy, all uint64 // /proc/stat's ticks at the last look
	lastLook  time.Time
	last      Sample
	have      bool
}

// Sample returns the latest sample, looking again when the last look is
// Every old; ok is false until there is one (and where /proc cannot be
// read).
func (s *Sampler) Sample(now time.Time) (Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lastLook.IsZero() && now.Sub(s.lastLook) < s.Every {
		return s.last, s.have
	}
	return s.look(now)
}

// Look samples now whenever it is called (a caller with its own ticker);
// ok is false on the first call, which only sets the CPU baseline.
func (s *Sampler) Look(now time.Time) (Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.look(now)
}

func (s *Sampler) look(now time.Time) (Sample, bool) {
	busy, all, okCPU := ProcCPU()
	used, total, okMem := ProcMem()
	first := s.lastLook.IsZero()
	prevBusy, prevAll := s.busy, s.all
	s.busy, s.all, s.lastLook = busy, all, now
	if first || !okCPU || !okMem || all <= prevAll || busy < prevBusy {
		return s.last, s.have
	}
	s.last = Sample{T: now.UnixMilli(), CPU: float64(busy-prevBusy) / float64(all-prevAll), MemUsed: used, MemTotal: total}
	s.have = true
	return s.last, true
}

// ProcCPU reads the busy and total CPU ticks of all cores from /proc/stat.
func ProcCPU() (busy, all uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i >= 8 { // guest and guest_nice are counted in user already
			break
		}
		all += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, all, true
}

// ProcMem reads the memory in use (MemTotal less MemAvailable) and in all
// from /proc/meminfo, in bytes.
func ProcMem() (used, total float64, ok bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var avail float64
	have := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() && have < 2 {
		k, v, _ := bytes.Cut(sc.Bytes(), []byte(":"))
		fields := bytes.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseFloat(string(fields[0]), 64)
		if err != nil {
			continue
		}
		switch string(k) {
		case "MemTotal":
			total, have = n*1024, have+1
		case "MemAvailable":
			avail, have = n*1024, have+1
		}
	}
	return total - avail, total, have == 2
}
