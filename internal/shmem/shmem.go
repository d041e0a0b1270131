// Package shmem holds what the two shared-memory transports (the
// driver's worker connections in runtime/wire and the plugin step
// transport in plugins/internal/wire) share: anonymous shared regions and
// futex sleeps on a word of them, between processes.
package shmem
