package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gray-ml/gray/plugins/internal/wire"
	pb "github.com/gray-ml/gray/plugins/proto"
	"github.com/gray-ml/gray/rllib"
)

// AgentAlgorithm describes the agent plugin at path as an rllib.Algorithm
// called name: every agent it makes is one plugin process.
func AgentAlgorithm(name, path string, opts Options) rllib.Algorithm {
	return rllib.Algorithm{
		Name: name,
		New: func(ctx context.Context, o rllib.Options, cfg rllib.Config) (rllib.Agent, error) {
			m, _ := cfg.(rllib.MapConfig)
			return NewAgent(ctx, path, o, m, opts)
		},
		// A plugin's defaults live in the plugin; the host knows none.
		DefaultConfig: func() rllib.Config { return rllib.MapConfig{} },
	}
}

// Agent is an rllib.Agent served by a plugin process.
type Agent struct {
	proc   *process
	client pb.AgentServiceClient
	logDir string
	iter   int
}

var _ rllib.Agent = (*Agent)(nil)

// NewAgent starts the agent plugin at path and sets it up with o and the
// user's config keys, which the plugin decodes.
func NewAgent(ctx context.Context, path string, o rllib.Options, config map[string]any, opts Options) (*Agent, error) {
	envCfg, err := json.Marshal(o.EnvConfig)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: env config cannot be sent as JSON: %w", path, err)
	}
	cfg, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: config cannot be sent as JSON: %w", path, err)
	}
	p, err := start(ctx, path, wire.KindAgent, opts)
	if err != nil {
		return nil, err
	}
	a := &Agent{proc: p, client: pb.NewAgentServiceClient(p.conn), logDir: o.LogDir}
	err = p.call(ctx, "setup", 0, func(ctx context.Context) error {
		_, err := a.client.Setup(ctx, &pb.AgentSetupRequest{
			Env: o.Env, EnvConfigJson: envCfg, ConfigJson: cfg, LogDir: o.LogDir, Seed: o.Seed,
		})
		return err
	})
	if err != nil {
		p.kill()
		return nil, err
	}
	return a, nil
}

// trainTimeout bounds one training iteration: only ctx limits it, as an
// iteration may legitimately take long.
const trainTimeout = 365 * 24 * time.Hour

// Train implements rllib.Agent.
func (a *Agent) Train(ctx context.Context) (rllib.Result, error) {
	var resp *pb.TrainResponse
	err := a.proc.call(ctx, "train", trainTimeout, func(ctx context.Context) (err error) {
		resp, err = a.client.Train(ctx, &pb.Empty{})
		return err
	})
	if err != nil {
		return rllib.Result{}, err
	}
	var r rllib.Result
	if err := json.Unmarshal(resp.ResultJson, &r); err != nil {
		return rllib.Result{}, a.proc.errorf("train", fmt.Errorf("answered a result that is not an rllib.Result in JSON: %w", err))
	}
	a.iter = int(resp.Iteration)
	return r, nil
}

// Save implements rllib.Agent.
func (a *Agent) Save(ctx context.Context) (string, error) {
	var resp *pb.SaveResponse
	err := a.proc.call(ctx, "save", 0, func(ctx context.Context) (err error) {
		resp, err = a.client.Save(ctx, &pb.Empty{})
		return err
	})
	if err != nil {
		return "", err
	}
	return resp.Path, nil
}

// Restore implements rllib.Agent.
func (a *Agent) Restore(ctx context.Context, path string) error {
	return a.proc.call(ctx, "restore", 0, func(ctx context.Context) error {
		_, err := a.client.Restore(ctx, &pb.RestoreRequest{Path: path})
		return err
	})
}

// ComputeAction implements rllib.Agent.
func (a *Agent) ComputeAction(obs []float64) ([]float64, error) {
	var resp *pb.ComputeActionResponse
	err := a.proc.call(context.Background(), "compute action", 0, func(ctx context.Context) (err error) {
		resp, err = a.client.ComputeAction(ctx, &pb.ComputeActionRequest{Obs: obs})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.Action, nil
}

// Iteration implements rllib.Agent.
func (a *Agent) Iteration() int { return a.iter }

// LogDir implements rllib.Agent.
func (a *Agent) LogDir() string { return a.logDir }

// Stop implements rllib.Agent: it stops the agent and its process.
func (a *Agent) Stop() error {
	err := a.proc.call(context.Background(), "stop", 10*time.Second, func(ctx context.Context) error {
		_, err := a.client.Stop(ctx, &pb.Empty{})
		return err
	})
	a.proc.kill()
	return err
}
