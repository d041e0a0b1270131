// Package suggest finds the known name a misspelled one most likely meant,
// for "did you mean" hints in error messages.
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the candidate nearest to word by edit distance, compared
// case-insensitively, when it is near enough to be a typo (at most 2 edits,
// or 3 for words of 8 letters or more); otherwise "".
func Closest(word string, candidates []string) string {
	limit := 2
	if len(word) >= 8 {
		limit = 3
	}
	best, bestD := "", limit+1
	lw := strings.ToLower(word)
	for _, c := range candidates {
		if d := Distance(lw, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean is Closest as a hint to append to an error message:
// ` (did you mean "CartPole-v1"?)`, or "" when nothing is close.
func DidYouMean(word string, candidates []string) string {
	if c := Closest(word, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
