package sdk

import (
	"context"
	"encoding/json"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gray-ml/gray/plugins/internal/wire"
	pb "github.com/gray-ml/gray/plugins/proto"
	"github.com/gray-ml/gray/rllib"
)

// AgentFactory creates a plugin's agent from the user's config keys, which
// it decodes itself (rllib.Decode names an unknown or wrong-typed key).
type AgentFactory func(ctx context.Context, o rllib.Options, config map[string]any) (rllib.Agent, error)

// ServeAgent serves the agents made by create as a Gray agent plugin, so
// that `train --alg plugin:<path>` runs it.
func ServeAgent(name string, create AgentFactory) {
	srv := &agentServer{create: create}
	serve(wire.KindAgent, name, func(s *grpc.Server) { pb.RegisterAgentServiceServer(s, srv) })
}

type agentServer struct {
	pb.UnimplementedAgentServiceServer
	create AgentFactory

	mu    sync.Mutex
	agent rllib.Agent
}

func (s *agentServer) Setup(ctx context.Context, req *pb.AgentSetupRequest) (*pb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent != nil {
		return nil, status.Error(codes.FailedPrecondition, "Setup called twice")
	}
	o := rllib.Options{Env: req.Env, LogDir: req.LogDir, Seed: req.Seed}
	if err := unmarshalObject(req.EnvConfigJson, &o.EnvConfig); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "env config: %v", err)
	}
	var config map[string]any
	if err := unmarshalObject(req.ConfigJson, &config); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "config: %v", err)
	}
	a, err := s.create(ctx, o, config)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.agent = a
	return &pb.Empty{}, nil
}

func unmarshalObject(data []byte, dst *map[string]any) error {
	if len(data) == 0 || string(data) == "null" {
		return nil
	}
	return json.Unmarshal(data, dst)
}

func (s *agentServer) ready() (rllib.Agent, error) {
	if s.agent == nil {
		return nil, status.Error(codes.FailedPrecondition, "agent not set up (the host must call Setup first)")
	}
	return s.agent, nil
}

func (s *agentServer) Train(ctx context.Context, _ *pb.Empty) (*pb.TrainResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.ready()
	if err != nil {
		return nil, err
	}
	r, err := a.Train(ctx)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding the result: %v", err)
	}
	return &pb.TrainResponse{ResultJson: data, Iteration: int32(a.Iteration())}, nil
}

func (s *agentServer) Save(ctx context.Context, _ *pb.Empty) (*pb.SaveResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.ready()
	if err != nil {
		return nil, err
	}
	path, err := a.Save(ctx)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.SaveResponse{Path: path}, nil
}

func (s *agentServer) Restore(ctx context.Context, req *pb.RestoreRequest) (*pb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.ready()
	if err != nil {
		return nil, err
	}
	if err := a.Restore(ctx, req.Path); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.Empty{}, nil
}

func (s *agentServer) ComputeAction(_ context.Context, req *pb.ComputeActionRequest) (*pb.ComputeActionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.ready()
	if err != nil {
		return nil, err
	}
	act, err := a.ComputeAction(req.Obs)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.ComputeActionResponse{Action: act}, nil
}

func (s *agentServer) Stop(context.Context, *pb.Empty) (*pb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent == nil {
		return &pb.Empty{}, nil
	}
	err := s.agent.Stop()
	s.agent = nil
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.Empty{}, nil
}
