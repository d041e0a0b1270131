package worker

import (
	"os"
	"os/signal"
	"runtime"

	"github.com/gray-ml/gray/runtime/task"
)

// maxStacks bounds one goroutine dump; a longer one is cut (its end says
// so) rather than grown without limit.
const maxStacks = 16 << 20

// answerStacks sends the driver this process's goroutine dump each time
// the driver signals task.SignalStacks, from a goroutine of its own, so
// that a worker busy in a task answers too. The goroutine lives as long as
// the process (the worker exits with its driver).
func (w *Worker) answerStacks() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, task.SignalStacks)
	go func() {
		for range sig {
			dump := goroutineDump()
			_ = w.conn.Send(task.MsgStacks, func(b []byte) []byte { return append(b, dump...) })
		}
	}()
}

// goroutineDump is every goroutine's stack, in a buffer grown until it
// holds them all or reaches maxStacks.
func goroutineDump() []byte {
	for size := 64 << 10; ; size *= 2 {
		buf := make([]byte, size)
		n := runtime.Stack(buf, true)
		if n < size {
			return buf[:n]
		}
		if size >= maxStacks {
			return append(buf[:n], "\n... (cut at 16 MiB)\n"...)
		}
	}
}
