// Package objstorebench holds the object store's benchmarks (see
// benchmarks/results/runtime.md, section "Object store"): small puts and gets at the
// store level, the codec's cost for small values, put bandwidth for 100 MiB
// arrays next to memcpy bandwidth measured in the same run, and zero-copy
// get latency for objects of any size.
//
// Run: go test ./benchmarks/objstore -run '^$' -bench . -count 5
package objstorebench
