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
)

// Model is what a model plugin implements: a differentiable function from
// rows of inputs to rows of outputs with a flat weight vector. Batches are
// row-major: batch rows of the input size in, batch rows of the output size
// out.
type Model interface {
	// Forward evaluates a batch.
	Forward(batch int, inputs []float64) ([]float64, error)
	// Backward evaluates the batch again and back-propagates outputGrads
	// (d loss / d outputs), returning d loss / d weights and d loss / d inputs.
	Backward(batch int, inputs, outputGrads []float64) (weightGrads, inputGrads []float64, err error)
	// Weights returns a copy of the weights.
	Weights() []float64
	// SetWeights replaces the weights.
	SetWeights(w []float64) error
}

// ModelCreator builds a model for the given input and output sizes from its
// config, initialising its weights from seed.
type ModelCreator func(cfg map[string]any, inputSize, outputSize int, seed int64) (Model, error)

// ServeModel serves the models made by create as a Gray model plugin.
func ServeModel(name string, create ModelCreator) {
	srv := &modelServer{create: create}
	serve(wire.KindModel, name, func(s *grpc.Server) { pb.RegisterModelServiceServer(s, srv) })
}

type modelServer struct {
	pb.UnimplementedModelServiceServer
	create ModelCreator

	mu      sync.Mutex
	model   Model
	in, out int
}

func (s *modelServer) Init(_ context.Context, req *pb.ModelInitRequest) (*pb.ModelInitResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cfg map[string]any
	if len(req.ConfigJson) > 0 {
		if err := json.Unmarshal(req.ConfigJson, &cfg); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "model config is not a JSON object: %v", err)
		}
	}
	if req.InputSize < 1 || req.OutputSize < 1 {
		return nil, status.Errorf(codes.InvalidArgument, "input and output sizes must be positive, got %d and %d", req.InputSize, req.OutputSize)
	}
	m, err := s.create(cfg, int(req.InputSize), int(req.OutputSize), req.Seed)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.model, s.in, s.out = m, int(req.InputSize), int(req.OutputSize)
	return &pb.ModelInitResponse{Weights: m.Weights(), OutputSize: req.OutputSize}, nil
}

func (s *modelServer) check(batch int32, inputs []float64) error {
	if s.model == nil {
		return status.Error(codes.FailedPrecondition, "model not initialised (the host must call Init first)")
	}
	if batch < 1 || len(inputs) != int(batch)*s.in {
		return status.Errorf(codes.InvalidArgument, "batch of %d rows of %d inputs needs %d values, got %d", batch, s.in, int(batch)*s.in, len(inputs))
	}
	return nil
}

func (s *modelServer) Forward(_ context.Context, req *pb.ForwardRequest) (*pb.ForwardResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(req.Batch, req.Inputs); err != nil {
		return nil, err
	}
	out, err := s.model.Forward(int(req.Batch), req.Inputs)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.ForwardResponse{Outputs: out}, nil
}

func (s *modelServer) Backward(_ context.Context, req *pb.BackwardRequest) (*pb.BackwardResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(req.Batch, req.Inputs); err != nil {
		return nil, err
	}
	if len(req.OutputGrads) != int(req.Batch)*s.out {
		return nil, status.Errorf(codes.InvalidArgument, "batch of %d rows of %d outputs needs %d output gradients, got %d",
			req.Batch, s.out, int(req.Batch)*s.out, len(req.OutputGrads))
	}
	wg, ig, err := s.model.Backward(int(req.Batch), req.Inputs, req.OutputGrads)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.BackwardResponse{WeightGrads: wg, InputGrads: ig}, nil
}

func (s *modelServer) GetWeights(context.Context, *pb.Empty) (*pb.Weights, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model == nil {
		return nil, status.Error(codes.FailedPrecondition, "model not initialised")
	}
	return &pb.Weights{Values: s.model.Weights()}, nil
}

func (s *modelServer) SetWeights(_ context.Context, req *pb.Weights) (*pb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model == nil {
		return nil, status.Error(codes.FailedPrecondition, "model not initialised")
	}
	if err := s.model.SetWeights(req.Values); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.Empty{}, nil
}
