package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/gray-ml/gray/plugins/internal/wire"
	pb "github.com/gray-ml/gray/plugins/proto"
)

// Model is a differentiable model served by a plugin process: rows of
// inputs to rows of outputs, with a flat weight vector that the host's
// optimiser updates (Backward gives the gradients, SetWeights the update).
type Model struct {
	proc    *process
	client  pb.ModelServiceClient
	ctx     context.Context
	in, out int
	nw      int
}

// NewModel starts the model plugin at path and builds a model of the given
// sizes from cfg, with weights initialised from seed.
func NewModel(ctx context.Context, path string, cfg map[string]any, inputSize, outputSize int, seed int64, opts Options) (*Model, error) {
	cj, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: model config cannot be sent as JSON: %w", path, err)
	}
	p, err := start(ctx, path, wire.KindModel, opts)
	if err != nil {
		return nil, err
	}
	m := &Model{proc: p, client: pb.NewModelServiceClient(p.conn), ctx: ctx, in: inputSize, out: outputSize}
	var resp *pb.ModelInitResponse
	err = p.call(ctx, "model init", 0, func(ctx context.Context) (err error) {
		resp, err = m.client.Init(ctx, &pb.ModelInitRequest{ConfigJson: cj, InputSize: int32(inputSize), OutputSize: int32(outputSize), Seed: seed})
		return err
	})
	if err == nil && int(resp.OutputSize) != outputSize {
		err = p.errorf("model init", fmt.Errorf("built a model of %d outputs, %d were asked for", resp.OutputSize, outputSize))
	}
	if err == nil {
		err = m.finite("initial weights", resp.Weights)
	}
	if err != nil {
		p.kill()
		return nil, err
	}
	m.nw = len(resp.Weights)
	return m, nil
}

// InputSize is the size of one input row.
func (m *Model) InputSize() int { return m.in }

// OutputSize is the size of one output row.
func (m *Model) OutputSize() int { return m.out }

// NumWeights is the length of the weight vector.
func (m *Model) NumWeights() int { return m.nw }

func (m *Model) finite(what string, xs []float64) error {
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return m.proc.errorf("model", fmt.Errorf("%s[%d] is %v", what, i, x))
		}
	}
	return nil
}

func (m *Model) checkBatch(batch int, inputs []float64) error {
	if batch < 1 || len(inputs) != batch*m.in {
		return fmt.Errorf("plugin %s: a batch of %d rows of %d inputs needs %d values, got %d", m.proc.path, batch, m.in, batch*m.in, len(inputs))
	}
	return nil
}

// Forward evaluates batch rows of inputs.
func (m *Model) Forward(batch int, inputs []float64) ([]float64, error) {
	if err := m.checkBatch(batch, inputs); err != nil {
		return nil, err
	}
	var resp *pb.ForwardResponse
	if err := m.proc.call(m.ctx, "forward", 0, func(ctx context.Context) (err error) {
		resp, err = m.client.Forward(ctx, &pb.ForwardRequest{Batch: int32(batch), Inputs: inputs})
		return err
	}); err != nil {
		return nil, err
	}
	if len(resp.Outputs) != batch*m.out {
		return nil, m.proc.errorf("forward", fmt.Errorf("answered %d outputs for %d rows of %d", len(resp.Outputs), batch, m.out))
	}
	return resp.Outputs, m.finite("outputs", resp.Outputs)
}

// Backward back-propagates outputGrads through the batch and returns the
// gradients with respect to the weights and the inputs.
func (m *Model) Backward(batch int, inputs, outputGrads []float64) (weightGrads, inputGrads []float64, err error) {
	if err := m.checkBatch(batch, inputs); err != nil {
		return nil, nil, err
	}
	if len(outputGrads) != batch*m.out {
		return nil, nil, fmt.Errorf("plugin %s: %d output gradients for %d rows of %d outputs", m.proc.path, len(outputGrads), batch, m.out)
	}
	var resp *pb.BackwardResponse
	if err := m.proc.call(m.ctx, "backward", 0, func(ctx context.Context) (err error) {
		resp, err = m.client.Backward(ctx, &pb.BackwardRequest{Batch: int32(batch), Inputs: inputs, OutputGrads: outputGrads})
		return err
	}); err != nil {
		return nil, nil, err
	}
	if len(resp.WeightGrads) != m.nw || len(resp.InputGrads) != batch*m.in {
		return nil, nil, m.proc.errorf("backward", fmt.Errorf("answered %d weight and %d input gradients; expected %d and %d",
			len(resp.WeightGrads), len(resp.InputGrads), m.nw, batch*m.in))
	}
	if err := m.finite("weight gradients", resp.WeightGrads); err != nil {
		return nil, nil, err
	}
	return resp.WeightGrads, resp.InputGrads, nil
}

// Weights returns the plugin's current weights.
func (m *Model) Weights() ([]float64, error) {
	var resp *pb.Weights
	if err := m.proc.call(m.ctx, "get weights", 0, func(ctx context.Context) (err error) {
		resp, err = m.client.GetWeights(ctx, &pb.Empty{})
		return err
	}); err != nil {
		return nil, err
	}
	return resp.Values, nil
}

// SetWeights replaces the plugin's weights.
func (m *Model) SetWeights(w []float64) error {
	if len(w) != m.nw {
		return fmt.Errorf("plugin %s: %d weights given, the model has %d", m.proc.path, len(w), m.nw)
	}
	return m.proc.call(m.ctx, "set weights", 0, func(ctx context.Context) error {
		_, err := m.client.SetWeights(ctx, &pb.Weights{Values: w})
		return err
	})
}

// Close stops the plugin process.
func (m *Model) Close() error {
	m.proc.kill()
	return nil
}
