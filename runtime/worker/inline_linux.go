package worker

// inlineExec lets a task run with nobody reading the driver's connection:
// on Linux the kernel kills a worker whose driver dies (Pdeathsig), so no
// reader needs to watch for the connection closing.
const inlineExec = true
