package models

import "time"

// await returns once ready reports true. A goroutine of a team that can
// spin watches for it for at most its window, then sleeps (s is its
// sleeper). The window follows the waits: after a wait no longer than
// most it becomes twice that wait (so the next alike wait is watched
// through), after a longer one it halves. A wait longer than most means
// the goroutine waited for has lost its core; on a busy machine watching
// for it takes CPU time from the process's share, which the goroutine
// waited for needs, while on an idle one the waits are short and watched
// through as before.
func (t *Team) await(s *sleeper, ready func() bool, most time.Duration) {
	if ready() {
		return
	}
	if !t.spin {
		s.sleepUnless(ready)
		return
	}
	win := most
	if s.window > 0 {
		win = min(s.window, most)
	}
	start := time.Now()
	for i := 0; ; i++ {
		if ready() {
			s.waited(time.Since(start), most)
			return
		}
		if i&63 == 63 && time.Since(start) > win {
			break
		}
	}
	s.sleepUnless(ready)
	s.waited(time.Since(start), most)
}

// minWindow is the shortest window a sleeper's watch keeps: about a
// wake-up's cost, below which sleeping costs more than watching.
const minWindow = 5 * time.Microsecond

// waited adapts the sleeper's window to a wait of d where it watched for
// at most most.
func (s *sleeper) waited(d, most time.Duration) {
	if d <= most {
		s.window = min(max(2*d, minWindow), watchFor)
		return
	}
	s.window = max(s.window/2, minWindow)
}
