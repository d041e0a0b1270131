package dashboard

import (
	"context"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gray-ml/gray/runtime/machine"
)

// historySpan is how far back node history goes; historyMax bounds the
// samples one node keeps whatever the interval.
const (
	historySpan       = time.Hour
	historyMax        = 3600
	defaultSampleEach = 5 * time.Second
)

// sample is one look at a node's machine.
type sample = machine.Sample

// history keeps each node's samples of the last hour in a ring of fixed
// size, so its memory does not grow with time.
type history struct {
	every time.Duration
	size  int

	mu    sync.Mutex
	rings map[string]*ring

	host    string
	sampler machine.Sampler // this machine's
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
	if smp, ok := h.sampler.Look(now); ok {
		h.add(h.host, smp)
	}
}

// add puts a sample in node's ring.
func (h *history) add(node string, smp sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rings[node]
	if r == nil {
		r = &ring{buf: make([]sample, max(h.size, 2))}
		h.rings[node] = r
	}
	r.add(smp)
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
