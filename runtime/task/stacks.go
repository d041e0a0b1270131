package task

import "syscall"

// MsgStacks (W→D) carries a worker's goroutine dump as text, every
// goroutine's stack as runtime.Stack writes them. The driver asks for it
// by sending the worker's process SignalStacks rather than a message: a
// worker running a task does not read its connection until the task ends
// (see worker.Serve), and a busy or stuck worker is the one whose stacks
// are wanted. Its number stands apart from the iota list so that other
// messages can be added there without renumbering it.
const MsgStacks byte = 80

// SignalStacks is the signal that asks a worker for MsgStacks.
const SignalStacks = syscall.SIGUSR1
