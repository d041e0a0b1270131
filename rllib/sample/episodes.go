package sample

import "math"

// EpisodeWindow keeps the most recent finished episodes (RLlib's
// metrics smoothing window) and summarises them.
type EpisodeWindow struct {
	size  int
	eps   []Episode
	next  int
	total int64
}

// NewEpisodeWindow keeps the last size episodes (at least 1).
func NewEpisodeWindow(size int) *EpisodeWindow {
	if size < 1 {
		size = 1
	}
	return &EpisodeWindow{size: size}
}

// Add records finished episodes in order.
func (w *EpisodeWindow) Add(eps ...Episode) {
	for _, e := range eps {
		w.total++
		if len(w.eps) < w.size {
			w.eps = append(w.eps, e)
			continue
		}
		w.eps[w.next] = e
		w.next = (w.next + 1) % w.size
	}
}

// Total is the number of episodes ever added.
func (w *EpisodeWindow) Total() int64 { return w.total }

// Len is the number of episodes in the window.
func (w *EpisodeWindow) Len() int { return len(w.eps) }

// EpisodeStats summarises a set of episodes. With no episodes every value
// is NaN (there is nothing to report yet), which JSON writers must handle.
type EpisodeStats struct {
	RewardMean, RewardMin, RewardMax, LenMean float64
}

// Stats summarises the episodes in the window.
func (w *EpisodeWindow) Stats() EpisodeStats { return Summarize(w.eps) }

// Episodes returns a copy of the window's episodes, oldest first.
func (w *EpisodeWindow) Episodes() []Episode {
	out := make([]Episode, 0, len(w.eps))
	out = append(out, w.eps[w.next:]...)
	return append(out, w.eps[:w.next]...)
}

// Summarize computes the mean, min and max reward and the mean length.
func Summarize(eps []Episode) EpisodeStats {
	if len(eps) == 0 {
		nan := math.NaN()
		return EpisodeStats{nan, nan, nan, nan}
	}
	s := EpisodeStats{RewardMin: math.Inf(1), RewardMax: math.Inf(-1)}
	for _, e := range eps {
		s.RewardMean += e.Reward
		s.LenMean += float64(e.Length)
		s.RewardMin = math.Min(s.RewardMin, e.Reward)
		s.RewardMax = math.Max(s.RewardMax, e.Reward)
	}
	s.RewardMean /= float64(len(eps))
	s.LenMean /= float64(len(eps))
	return s
}

// SetTotal sets the count of episodes ever added (when restoring a
// checkpoint whose window holds only the most recent ones).
func (w *EpisodeWindow) SetTotal(n int64) { w.total = n }

// WindowState is what a checkpoint keeps of an EpisodeWindow: its recent
// episodes and the count of all. An algorithm's checkpoint state embeds
// it.
type WindowState struct {
	Episodes      []Episode
	EpisodesTotal int64
}

// State returns w's episodes and count.
func (w *EpisodeWindow) State() WindowState {
	return WindowState{Episodes: w.Episodes(), EpisodesTotal: w.total}
}

// NewEpisodeWindowFrom is a window of size episodes holding st, as State
// returned it.
func NewEpisodeWindowFrom(size int, st WindowState) *EpisodeWindow {
	w := NewEpisodeWindow(size)
	w.Add(st.Episodes...)
	w.total = st.EpisodesTotal
	return w
}
