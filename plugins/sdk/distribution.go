package sdk

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/internal/wire"
	pb "github.com/gray-ml/gray/plugins/proto"
)

// Distribution is what an action-distribution plugin implements. Every
// method takes batch rows of parameters ("inputs", a model's outputs) of
// InputSize values each and answers one value per row; gradients are with
// respect to each row's inputs, row-major like the inputs.
type Distribution interface {
	// InputSize is the number of parameters of one row.
	InputSize() int
	// ActionSize is the size of one action.
	ActionSize() int
	// Sample draws one action per row (the mode when deterministic).
	Sample(batch int, inputs []float64, rng *rand.Rand, deterministic bool) ([]float64, error)
	// LogLikelihood is log p(action | inputs) per row and its gradient.
	LogLikelihood(batch int, inputs, actions []float64) (values, inputGrads []float64, err error)
	// Entropy is the entropy per row and its gradient.
	Entropy(batch int, inputs []float64) (values, inputGrads []float64, err error)
	// KL is KL(p_i || q_i) per row and its gradients in p and in q.
	KL(batch int, p, q []float64) (values, gradP, gradQ []float64, err error)
}

// DistributionCreator builds a distribution over actionSpace from its config.
type DistributionCreator func(cfg map[string]any, actionSpace envs.Space) (Distribution, error)

// ServeDistribution serves the distributions made by create as a Gray
// action-distribution plugin.
func ServeDistribution(name string, create DistributionCreator) {
	srv := &distServer{create: create}
	serve(wire.KindDistribution, name, func(s *grpc.Server) { pb.RegisterDistributionServiceServer(s, srv) })
}

type distServer struct {
	pb.UnimplementedDistributionServiceServer
	create DistributionCreator

	mu   sync.Mutex
	dist Distribution
}

func (s *distServer) Init(_ context.Context, req *pb.DistributionInitRequest) (*pb.DistributionInitResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cfg map[string]any
	if len(req.ConfigJson) > 0 {
		if err := json.Unmarshal(req.ConfigJson, &cfg); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "distribution config is not a JSON object: %v", err)
		}
	}
	space, err := wire.SpaceFromProto(req.ActionSpace)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "action space: %v", err)
	}
	d, err := s.create(cfg, space)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.dist = d
	return &pb.DistributionInitResponse{InputSize: int32(d.InputSize()), ActionSize: int32(d.ActionSize())}, nil
}

func (s *distServer) check(batch int32, inputs []float64) error {
	if s.dist == nil {
		return status.Error(codes.FailedPrecondition, "distribution not initialised (the host must call Init first)")
	}
	if batch < 1 || len(inputs) != int(batch)*s.dist.InputSize() {
		return status.Errorf(codes.InvalidArgument, "batch of %d rows of %d inputs needs %d values, got %d",
			batch, s.dist.InputSize(), int(batch)*s.dist.InputSize(), len(inputs))
	}
	return nil
}

func (s *distServer) Sample(_ context.Context, req *pb.SampleRequest) (*pb.SampleResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(req.Batch, req.Inputs); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(req.Seed), 0x5eed))
	a, err := s.dist.Sample(int(req.Batch), req.Inputs, rng, req.Deterministic)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.SampleResponse{Actions: a}, nil
}

func (s *distServer) LogLikelihood(_ context.Context, req *pb.LogLikelihoodRequest) (*pb.ValuesWithGrad, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(req.Batch, req.Inputs); err != nil {
		return nil, err
	}
	if len(req.Actions) != int(req.Batch)*s.dist.ActionSize() {
		return nil, status.Errorf(codes.InvalidArgument, "%d action values for %d rows of action size %d", len(req.Actions), req.Batch, s.dist.ActionSize())
	}
	v, g, err := s.dist.LogLikelihood(int(req.Batch), req.Inputs, req.Actions)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.ValuesWithGrad{Values: v, InputGrads: g}, nil
}

func (s *distServer) Entropy(_ context.Context, req *pb.EntropyRequest) (*pb.ValuesWithGrad, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(req.Batch, req.Inputs); err != nil {
		return nil, err
	}
	v, g, err := s.dist.Entropy(int(req.Batch), req.Inputs)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.ValuesWithGrad{Values: v, InputGrads: g}, nil
}

func (s *distServer) KL(_ context.Context, req *pb.KLRequest) (*pb.KLResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(req.Batch, req.InputsP); err != nil {
		return nil, err
	}
	if err := s.check(req.Batch, req.InputsQ); err != nil {
		return nil, err
	}
	v, gp, gq, err := s.dist.KL(int(req.Batch), req.InputsP, req.InputsQ)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.KLResponse{Values: v, GradsP: gp, GradsQ: gq}, nil
}
