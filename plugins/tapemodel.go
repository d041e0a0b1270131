package plugins

import (
	"context"
	"fmt"
	"slices"

	"github.com/gray-ml/gray/models"
)

// TapeModel makes a model plugin a models.Model: its forward pass is one
// step of a models.Tape (Tape.Apply) and its weights are an ordinary
// parameter tensor on the host, so the host's optimisers, gradient clipping
// and weight shipping work on it unchanged. The plugin mirrors the host's
// weights: before a forward pass the host sends them when they changed.
//
// With value set the plugin is built with one extra output, the value
// estimate (its last column): Output.Out holds the other columns.
type TapeModel struct {
	m      *Model
	params *models.Params
	w      *models.Tensor
	out    int
	value  bool
	fn     *pluginFunc
}

var _ models.Model = (*TapeModel)(nil)

// NewTapeModel adapts m, a model plugin built with numOutputs outputs (plus
// one when value is set), starting from the plugin's initial weights.
func NewTapeModel(m *Model, numOutputs int, value bool) (*TapeModel, error) {
	want := numOutputs
	if value {
		want++
	}
	if m.OutputSize() != want {
		return nil, fmt.Errorf("plugin %s: the model has %d outputs; %d needed (%d distribution inputs%s)",
			m.proc.path, m.OutputSize(), want, numOutputs, map[bool]string{true: " and a value", false: ""}[value])
	}
	w, err := m.Weights()
	if err != nil {
		return nil, err
	}
	params := models.NewParams()
	tm := &TapeModel{m: m, params: params, w: params.New("plugin_weights", 1, len(w)), out: numOutputs, value: value}
	if err := params.SetFlat(w); err != nil {
		return nil, err
	}
	tm.fn = &pluginFunc{m: m, sent: slices.Clone(w)}
	return tm, nil
}

// Params implements models.Model.
func (tm *TapeModel) Params() *models.Params { return tm.params }

// NumInputs implements models.Model.
func (tm *TapeModel) NumInputs() int { return tm.m.InputSize() }

// NumOutputs implements models.Model.
func (tm *TapeModel) NumOutputs() int { return tm.out }

// Forward implements models.Model. Errors of the plugin are reported by
// t.Err, as for every tape operation.
func (tm *TapeModel) Forward(t *models.Tape, obs *models.Tensor) models.Output {
	y := t.Apply(tm.fn, obs, tm.w, tm.m.OutputSize())
	if !tm.value {
		return models.Output{Out: y, Last: y}
	}
	return models.Output{Out: t.Cols(y, 0, tm.out), Last: y, Value: t.Cols(y, tm.out, tm.out+1)}
}

// Close stops the plugin process.
func (tm *TapeModel) Close() error { return tm.m.Close() }

// pluginFunc is the model plugin as a models.Func.
type pluginFunc struct {
	m    *Model
	sent []float64 // the weights the plugin holds
}

// sync sends the host's weights when they differ from the plugin's: the
// comparison costs far less than the call it avoids.
func (f *pluginFunc) sync(w []float64) error {
	if slices.Equal(w, f.sent) {
		return nil
	}
	if err := f.m.SetWeights(w); err != nil {
		return err
	}
	f.sent = append(f.sent[:0], w...)
	return nil
}

func (f *pluginFunc) Forward(x, w, out *models.Tensor) error {
	if err := f.sync(w.Data); err != nil {
		return err
	}
	y, err := f.m.Forward(x.Rows, x.Data[:x.Len()])
	if err != nil {
		return err
	}
	copy(out.Data, y)
	return nil
}

func (f *pluginFunc) Backward(x, w, _ *models.Tensor, outGrad, xGrad, wGrad []float64) error {
	if err := f.sync(w.Data); err != nil {
		return err
	}
	wg, xg, err := f.m.Backward(x.Rows, x.Data[:x.Len()], outGrad)
	if err != nil {
		return err
	}
	for i := range wGrad {
		wGrad[i] += wg[i]
	}
	for i := range xGrad {
		xGrad[i] += xg[i]
	}
	return nil
}

// CatalogModel starts the model plugin at path and adapts it as a
// models.Model with numOutputs distribution inputs (and a value column when
// value is set): what a model catalog hook for "plugin:<path>" models calls.
// The plugin process lives until Close or the host's exit.
func CatalogModel(path string, cfg map[string]any, numInputs, numOutputs int, value bool, seed uint64) (*TapeModel, error) {
	out := numOutputs
	if value {
		out++
	}
	m, err := NewModel(context.Background(), path, cfg, numInputs, out, int64(seed), Options{})
	if err != nil {
		return nil, err
	}
	tm, err := NewTapeModel(m, numOutputs, value)
	if err != nil {
		m.Close()
		return nil, err
	}
	return tm, nil
}
