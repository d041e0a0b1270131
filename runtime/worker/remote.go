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

// dial connects to the driver or, for a direct call, to another actor's
// worker: a Unix socket path, or "tcp:HOST:PORT" on another node, proving
// it holds the cluster token (task.EnvToken).
func dial(sock string) (net.Conn, error) {
	addr, ok := strings.CutPrefix(sock, "tcp:")
	if !ok {
		return net.Dial("unix", sock)
	}
	tok, err := clusterToken("to connect to " + addr + " with")
	if err != nil {
		return nil, err
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

// clusterToken is the cluster token this worker was started with
// (task.EnvToken); why says what it is for, in the error when it is
// missing.
func clusterToken(why string) ([]byte, error) {
	tok, err := hex.DecodeString(os.Getenv(task.EnvToken))
	if err != nil || len(tok) == 0 {
		return nil, fmt.Errorf("no cluster token in %s %s", task.EnvToken, why)
	}
	return tok, nil
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
