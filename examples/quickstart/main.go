// Command quickstart is the runtime example of the README: a remote function
// whose argument is another call's future, and an actor.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/gray-ml/gray"
)

var add = gray.Func2("add", func(ctx context.Context, a, b int) (int, error) { return a + b, nil })

// Counter is an actor: its state lives in its own worker process.
type Counter struct{ n int }

// Incr adds one and returns the new count.
func (c *Counter) Incr(ctx context.Context) (int, error) { c.n++; return c.n, nil }

var counter = gray.Actor0("Counter", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil })
var incr = gray.Method0(counter, "Incr", (*Counter).Incr)

func main() {
	gray.ServeIfWorker() // worker processes are this executable, started again
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 4}); err != nil {
		log.Fatal(err)
	}
	defer gray.Shutdown()
	sum, err := gray.Get(ctx, add.Remote(1, add.Remote(2, 3)))
	if err != nil {
		log.Fatal(err)
	}
	c, err := counter.Remote(ctx)
	if err != nil {
		log.Fatal(err)
	}
	n, err := gray.Get(ctx, incr.Remote(c))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum, n) // 6 1
}
