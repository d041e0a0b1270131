package control

import (
	"context"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/machine"
)

// A node's heartbeats append each new machine sample to its history once
// (a heartbeat every 200 ms repeats a sample taken every 5 s), keep only
// the last hour's count, and a node that sends none (an older node) has
// none.
func TestNodeHistoryKeepsEachSampleOnceAndIsBounded(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "")
	ctx := context.Background()
	for _, id := range []string{"new", "old"} {
		if err := r.RegisterNode(ctx, NodeInfo{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour).UnixMilli()
	const sent = machineHistoryLen + 50
	for i := 0; i < sent; i++ {
		smp := &machine.Sample{T: t0 + int64(i)*MachineSampleEvery.Milliseconds(), CPU: float64(i%100) / 100, MemUsed: 1 << 30, MemTotal: 4 << 30}
		for repeat := 0; repeat < 2; repeat++ { // the same sample in two heartbeats
			if err := r.Heartbeat(ctx, "new", NodeLoad{Machine: smp}); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Heartbeat(ctx, "old", NodeLoad{}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := r.NodeHistories(ctx, []string{"new", "old", "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	got := h["new"]
	if len(got) != machineHistoryLen {
		t.Fatalf("history of %d samples after %d sent twice each, want the last %d", len(got), sent, machineHistoryLen)
	}
	for i, smp := range got {
		if want := t0 + int64(sent-machineHistoryLen+i)*MachineSampleEvery.Milliseconds(); smp.T != want || smp.MemTotal != 4<<30 {
			t.Fatalf("sample %d = %+v, want time %d (oldest first, each once)", i, smp, want)
		}
	}
	if _, ok := h["old"]; ok {
		t.Errorf("a node that sent no samples has a history: %v", h["old"])
	}
	if _, ok := h["unknown"]; ok {
		t.Errorf("an unknown node has a history")
	}
	nodes, err := r.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if (n.ID == "new") != (n.Load.Machine != nil) {
			t.Errorf("node %s's latest machine sample: %+v", n.ID, n.Load.Machine)
		}
	}
	// The list expires an hour after the last sample: dead nodes' go.
	if ttl := r.c.PTTL(ctx, nodeHistoryKey("new")).Val(); ttl <= 0 || ttl > MachineHistorySpan {
		t.Errorf("history expires in %v, want within %v", ttl, MachineHistorySpan)
	}
}
