package main

import (
	"context"
	"time"

	"github.com/gray-ml/gray"
)

// actorClients is the n:n actor row with process clients, as Ray's is: k
// counter actors, and k client actors that each call all of them from its
// own process for d. Clients calling actors are where direct actor calls
// (on unless GRAY_DIRECT_CALLS=0, runtime/worker/direct.go) bypass the driver; the
// goroutine row beside it calls from the driver.
func actorClients(ctx context.Context, k int, d time.Duration, start, stop func()) (calls, seconds float64, err error) {
	hs := make([]gray.Handle[benchCounter], 0, k)
	defer func() {
		for _, h := range hs {
			_ = gray.Kill(h)
		}
	}()
	for range k {
		h, err := mbCounter.Remote(ctx)
		if err != nil {
			return 0, 0, err
		}
		hs = append(hs, h)
	}
	return processClients(ctx, k, d, func(c gray.Handle[benchCounter], d time.Duration) gray.Ref[int] {
		return mbCallFor.Remote(c, hs, d)
	}, start, stop)
}
