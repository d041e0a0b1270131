// Package sdk is what a plugin author imports: implement the same Go
// interface as a built-in (an envs.Env, an rllib.Agent, ...) and call the
// matching Serve function from main. The SDK answers the go-plugin
// handshake, batches sub-environments, sends logs to the host and exits
// when the host goes away, even when the host was killed with SIGKILL.
//
//	func main() {
//		sdk.ServeEnv("GridWorld", func(cfg envs.Config) (envs.Env, error) { return newGrid(cfg) })
//	}
package sdk

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/gray-ml/gray/plugins/internal/wire"
	pb "github.com/gray-ml/gray/plugins/proto"
)

// Logger returns a logger whose lines reach the host's run log: the plugin
// writes JSON lines to stderr and the host re-logs them at their level.
func Logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Output:     os.Stderr,
		JSONFormat: true,
		Level:      hclog.Info,
	})
}

// parentPollInterval is how often the watchdog checks that the host lives.
const parentPollInterval = 250 * time.Millisecond

// serve runs the go-plugin server for one kind of plugin until the host
// shuts it down or dies.
func serve(kind, name string, register func(s *grpc.Server)) {
	logger := Logger(name)
	guardParent(logger)
	info := &infoServer{
		desc:   &pb.Description{Kind: kind, ProtocolVersion: wire.ProtocolVersion, Name: name},
		stderr: os.Stderr,
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		Plugins: wire.Set(func(s *grpc.Server) {
			pb.RegisterInfoServer(s, info)
			register(s)
		}),
		GRPCServer: plugin.DefaultGRPCServer,
		Logger:     logger,
	})
}

// guardParent makes the plugin exit when its host dies. go-plugin alone
// leaves the plugin running when the host is SIGKILLed (its clean-up runs in
// the host), so the plugin asks the kernel for a signal on its parent's death
// where it can (Linux) and, everywhere, watches its parent pid: a changed
// parent means the host is gone and the plugin was re-parented.
func guardParent(logger hclog.Logger) {
	ppid := os.Getppid()
	// Unset so that plugins this plugin starts (an agent's environment) do
	// not inherit it: go-plugin puts the parent's environment after the
	// variables the host sets, and the inherited value would win.
	hostPID := os.Getenv(wire.HostPIDEnv)
	_ = os.Unsetenv(wire.HostPIDEnv)
	if want, err := strconv.Atoi(hostPID); err == nil && want != ppid {
		logger.Error("host process is gone before the plugin started; exiting", "host_pid", want)
		os.Exit(3)
	}
	setParentDeathSignal()
	// The parent may have died between fork and the call above.
	if os.Getppid() != ppid {
		os.Exit(3)
	}
	go func() { // owned by the process: it ends with it
		for range time.Tick(parentPollInterval) {
			if os.Getppid() != ppid {
				logger.Error("host process died; exiting")
				os.Exit(3)
			}
		}
	}()
}

type infoServer struct {
	pb.UnimplementedInfoServer
	desc   *pb.Description
	stderr *os.File // the process's real stderr
	once   sync.Once
}

// Describe is the host's first call. It also points os.Stderr back at the
// process's real stderr: go-plugin redirects it into a gRPC stream after
// the handshake, and what a plugin writes just before it crashes would then
// be lost; written to the real stderr, it reaches the host's error messages.
func (s *infoServer) Describe(context.Context, *pb.Empty) (*pb.Description, error) {
	s.once.Do(func() { os.Stderr = s.stderr })
	return s.desc, nil
}
