// Package testserver starts throwaway server processes for the tests and benchmarks of
// corral's modules: it finds a binary, picks a free loopback port, runs the server so that it
// dies with the test process (Pdeathsig) in a process group of its own, waits until a check
// the caller gives passes, and can SIGKILL it with every process it forked (Kill), start it
// again on its data (Restart), stop and resume it (Pause, Continue), stop it (Stop) and show
// the end of its log (LogTail). It uses the standard library only, and /proc: Linux only.
//
// natstest, pgtest and redistest (internal to their backend modules) and the servers of the
// bench module build on it; Go's internal rule goes by import path, so every module of this
// repository may import it, and no user can.
//
// server.go holds Spec and Server (a process and its lifecycle); tree.go the process tree
// (freeze, signal, wait for it to be gone); find.go binaries, free ports, commands and the
// unprivileged user; postgres.go and redis.go the settings of those two servers, shared by
// their test helpers and by bench.
package testserver
