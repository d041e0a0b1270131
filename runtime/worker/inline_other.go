//go:build !linux

package worker

// inlineExec is false where workers notice their driver's death only by
// their connection closing: a reader runs beside every task.
const inlineExec = false
