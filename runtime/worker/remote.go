package worker

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/gray-ml/gray/runtime/codec"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
)

// dial connects to the driver: a Unix socket path, or "tcp:HOST:PORT" for a
// worker another node started, which proves it holds the cluster token
// (task.EnvToken).
func dial(sock string) (net.Conn, error) {
	addr, ok := strings.CutPrefix(sock, "tcp:")
	if !ok {
		return net.Dial("unix", sock)
	}
	tok, err := hex.DecodeString(os.Getenv(task.EnvToken))
	if err != nil {
		return nil, fmt.Errorf("%s is not hex: %w", task.EnvToken, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := transfer.Dial(ctx, addr, tok)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return c, nil
}

// encodeInline encodes a large value zero-copy into memory of its own, for
// a worker whose driver is on another node: the value travels inline and
// the driver stores it in its shared memory.
func encodeInline(size int, encode func([]byte) error) ([]byte, error) {
	b := codec.AlignedBytes(size)
	if err := encode(b); err != nil {
		return nil, err
	}
	return b, nil
}
