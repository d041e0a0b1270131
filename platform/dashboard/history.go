package dashboard

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// historySpan is how far back node history goes; historyMax bounds the
// samples one node keeps whatever the interval.
const (
	historySpan       = time.Hour
	historyMax        = 3600
	defaultSampleEach = 5 * time.Second
)

// sample is one look at a node: when, the share of its CPU time busy
// since the last look, and its memory in use and in all (bytes).
type sample struct {
	T        int64   `json:"t"` // Unix milliseconds
	CPU      float64 `json:"cpu"`
	MemUsed  float64 `json:"mem_used"`
	MemTotal float64 `json:"mem_total"`
}

// history keeps each node's samples of the last hour in a ring of fixed
// size, so its memory does not grow with time.
type history struct {
	every time.Duration
	size  int

	mu    sync.Mutex
	rings map[string]*ring

	host     string
	lastBusy uint64 // /proc/stat's busy and total ticks at the last look
	lastAll  uint64
}

// ring holds the latest samples, oldest first from next once full.
type ring struct {
	buf  []sample
	next int
	full bool
}

func (r *ring) add(s sample) {
	r.buf[r.next] = s
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

func (r *ring) list() []sample {
	if !r.full {
		return append([]sample(nil), r.buf[:r.next]...)
	}
	return append(append([]sample(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

func newHistory(every time.Duration) *history {
	if every <= 0 {
		every = defaultSampleEach
	}
	host, _ := os.Hostname()
	return &history{every: every, size: min(int(historySpan/every), historyMax), rings: map[string]*ring{}, host: host}
}

// run samples the machine until ctx ends.
func (h *history) run(ctx context.Context) {
	h.look(time.Now())
	tick := time.NewTicker(h.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			h.look(now)
		}
	}
}

// look samples this machine from /proc: the driver's machine is the node
// the session's workers run on. The first look only sets the CPU baseline.
func (h *history) look(now time.Time) {
	busy, all, okCPU := procCPU()
	used, total, okMem := procMem()
	h.mu.Lock()
	defer h.mu.Unlock()
	first := h.lastAll == 0
	dBusy, dAll := busy-h.lastBusy, all-h.lastAll
	h.lastBusy, h.lastAll = busy, all
	if first || !okCPU || !okMem || dAll == 0 {
		return
	}
	r := h.rings[h.host]
	if r == nil {
		r = &ring{buf: make([]sample, max(h.size, 2))}
		h.rings[h.host] = r
	}
	r.add(sample{T: now.UnixMilli(), CPU: float64(dBusy) / float64(dAll), MemUsed: used, MemTotal: total})
}

// procCPU reads the busy and total CPU ticks of all cores from /proc/stat.
func procCPU() (busy, all uint64, ok bool) {
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

// procMem reads the memory in use (MemTotal less MemAvailable) and in all
// from /proc/meminfo, in bytes.
func procMem() (used, total float64, ok bool) {
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

// apiHistory answers /api/runtime/history: each node's CPU and memory
// samples of the last hour.
func (s *Server) apiHistory(w http.ResponseWriter, _ *http.Request) {
	h := s.history
	h.mu.Lock()
	type node struct {
		Name    string   `json:"name"`
		Samples []sample `json:"samples"`
	}
	nodes := []node{}
	for name, r := range h.rings {
		nodes = append(nodes, node{Name: name, Samples: r.list()})
	}
	h.mu.Unlock()
	writeJSON(w, map[string]any{"every_ms": h.every.Milliseconds(), "span_s": int(historySpan.Seconds()), "nodes": nodes})
}
