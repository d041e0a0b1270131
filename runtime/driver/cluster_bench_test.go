package driver_test

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/redis/go-redis/v9"
)

// benchFar runs only on the node that has the "bench" resource: another
// node than the driver's.
var benchFar = gray.Func1("test.cluster.benchFar", func(ctx context.Context, x int) (int, error) { return x, nil },
	gray.Resource("bench", 0.001), gray.CPUs(0))

// BenchmarkClusterLoopback measures tasks that run on another node of a
// loopback cluster: synchronous calls (beside a 64-byte TCP ping-pong over
// loopback, the floor of any socket round trip), asynchronous throughput,
// and the Redis commands the cluster serves per task (less what it serves
// idle in the same time: heartbeats and node-table rereads).
func BenchmarkClusterLoopback(b *testing.B) {
	c := clustertest.Start(b, clustertest.Options{Nodes: 1, CPUsPerNode: 2, NodeResources: map[int]map[string]float64{1: {"bench": 1}}})
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{Address: c.Address(), Token: c.Token(), NoTimeline: true}); err != nil {
		b.Fatal(err)
	}
	defer gray.Shutdown()
	deadline := time.Now().Add(30 * time.Second)
	for gray.ClusterResources()["bench"] < 1 {
		if time.Now().After(deadline) {
			b.Fatal("the bench node did not join")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rc := redis.NewClient(&redis.Options{Addr: c.Address(), Password: c.Token()})
	defer rc.Close()
	commands := func() float64 {
		s, err := rc.Info(ctx, "stats").Result()
		if err != nil {
			b.Fatal(err)
		}
		m := regexp.MustCompile(`total_commands_processed:(\d+)`).FindStringSubmatch(s)
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	b.Run("sync-task-other-node", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := gray.Get(ctx, benchFar.Remote(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tcp-ping-pong-64B", func(b *testing.B) { tcpPingPong(b) })
	b.Run("async-tasks-other-node", func(b *testing.B) {
		start := time.Now()
		c0 := commands()
		refs := make([]gray.Ref[int], 0, 1000)
		for i := 0; i < b.N; i++ {
			refs = append(refs, benchFar.Remote(i))
			if len(refs) == cap(refs) || i == b.N-1 {
				if _, err := gray.GetAll(ctx, refs); err != nil {
					b.Fatal(err)
				}
				refs = refs[:0]
			}
		}
		el := time.Since(start)
		busy := commands() - c0
		time.Sleep(el)
		idle := commands() - busy - c0
		b.ReportMetric(float64(b.N)/el.Seconds(), "tasks/s")
		b.ReportMetric(max(0, busy-idle)/float64(b.N), "redis-cmds/task")
	})
}

// tcpPingPong bounces 64 bytes between two goroutines over loopback TCP.
func tcpPingPong(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		for {
			if _, err := readFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := readFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func readFull(c net.Conn, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := c.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
