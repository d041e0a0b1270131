package plugins

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/internal/wire"
	pb "github.com/gray-ml/gray/plugins/proto"
)

// Distribution is an action distribution served by a plugin process. Every
// method takes batch rows of InputSize parameters and answers per row, with
// gradients with respect to those parameters (row-major).
type Distribution struct {
	proc         *process
	client       pb.DistributionServiceClient
	ctx          context.Context
	inSize, aDim int
}

// NewDistribution starts the distribution plugin at path for actionSpace.
func NewDistribution(ctx context.Context, path string, cfg map[string]any, actionSpace envs.Space, opts Options) (*Distribution, error) {
	cj, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: distribution config cannot be sent as JSON: %w", path, err)
	}
	sp, err := wire.SpaceToProto(actionSpace)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	p, err := start(ctx, path, wire.KindDistribution, opts)
	if err != nil {
		return nil, err
	}
	d := &Distribution{proc: p, client: pb.NewDistributionServiceClient(p.conn), ctx: ctx}
	var resp *pb.DistributionInitResponse
	err = p.call(ctx, "distribution init", 0, func(ctx context.Context) (err error) {
		resp, err = d.client.Init(ctx, &pb.DistributionInitRequest{ConfigJson: cj, ActionSpace: sp})
		return err
	})
	if err == nil && (resp.InputSize < 1 || int(resp.ActionSize) != actionSpace.Size()) {
		err = p.errorf("distribution init", fmt.Errorf("reported %d inputs and actions of size %d for action space %s",
			resp.InputSize, resp.ActionSize, actionSpace))
	}
	if err != nil {
		p.kill()
		return nil, err
	}
	d.inSize, d.aDim = int(resp.InputSize), int(resp.ActionSize)
	return d, nil
}

// InputSize is the number of parameters of one row.
func (d *Distribution) InputSize() int { return d.inSize }

func (d *Distribution) sized(op string, got, want int) error {
	if got != want {
		return d.proc.errorf(op, fmt.Errorf("answered %d values, expected %d", got, want))
	}
	return nil
}

// Sample draws one action per row from a seeded source (the mode when
// deterministic), returning batch rows of the action size.
func (d *Distribution) Sample(batch int, inputs []float64, seed int64, deterministic bool) ([]float64, error) {
	var resp *pb.SampleResponse
	if err := d.proc.call(d.ctx, "sample", 0, func(ctx context.Context) (err error) {
		resp, err = d.client.Sample(ctx, &pb.SampleRequest{Batch: int32(batch), Inputs: inputs, Seed: seed, Deterministic: deterministic})
		return err
	}); err != nil {
		return nil, err
	}
	return resp.Actions, d.sized("sample", len(resp.Actions), batch*d.aDim)
}

// LogLikelihood returns log p(action | inputs) per row and its gradient.
func (d *Distribution) LogLikelihood(batch int, inputs, actions []float64) (values, grads []float64, err error) {
	var resp *pb.ValuesWithGrad
	if err := d.proc.call(d.ctx, "log-likelihood", 0, func(ctx context.Context) (err error) {
		resp, err = d.client.LogLikelihood(ctx, &pb.LogLikelihoodRequest{Batch: int32(batch), Inputs: inputs, Actions: actions})
		return err
	}); err != nil {
		return nil, nil, err
	}
	return d.valuesWithGrad("log-likelihood", batch, resp)
}

// Entropy returns the entropy per row and its gradient.
func (d *Distribution) Entropy(batch int, inputs []float64) (values, grads []float64, err error) {
	var resp *pb.ValuesWithGrad
	if err := d.proc.call(d.ctx, "entropy", 0, func(ctx context.Context) (err error) {
		resp, err = d.client.Entropy(ctx, &pb.EntropyRequest{Batch: int32(batch), Inputs: inputs})
		return err
	}); err != nil {
		return nil, nil, err
	}
	return d.valuesWithGrad("entropy", batch, resp)
}

func (d *Distribution) valuesWithGrad(op string, batch int, r *pb.ValuesWithGrad) ([]float64, []float64, error) {
	if err := d.sized(op, len(r.Values), batch); err != nil {
		return nil, nil, err
	}
	if err := d.sized(op+" gradient", len(r.InputGrads), batch*d.inSize); err != nil {
		return nil, nil, err
	}
	return r.Values, r.InputGrads, nil
}

// KL returns KL(p_i || q_i) per row and its gradients in p and q.
func (d *Distribution) KL(batch int, p, q []float64) (values, gradP, gradQ []float64, err error) {
	var resp *pb.KLResponse
	if err := d.proc.call(d.ctx, "KL", 0, func(ctx context.Context) (err error) {
		resp, err = d.client.KL(ctx, &pb.KLRequest{Batch: int32(batch), InputsP: p, InputsQ: q})
		return err
	}); err != nil {
		return nil, nil, nil, err
	}
	if err := d.sized("KL", len(resp.Values), batch); err != nil {
		return nil, nil, nil, err
	}
	if err := d.sized("KL gradient", len(resp.GradsP)+len(resp.GradsQ), 2*batch*d.inSize); err != nil {
		return nil, nil, nil, err
	}
	return resp.Values, resp.GradsP, resp.GradsQ, nil
}

// Close stops the plugin process.
func (d *Distribution) Close() error {
	d.proc.kill()
	return nil
}
