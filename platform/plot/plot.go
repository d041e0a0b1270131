// Package plot draws learning curves from run folders with gonum/plot.
package plot

import (
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gray-ml/gray/platform/runlog"
)

// Options choose what to plot.
type Options struct {
	// Metric is the y axis: a flat result key (default episode_reward_mean).
	Metric string
	// X is the x axis (default timesteps_total).
	X string
	// Title is the plot's title (default the metric).
	Title string
	// Width and Height in inches (default 8 × 5).
	Width, Height float64
}

// Curve is one run's learning curve.
type Curve struct {
	Label string
	X, Y  []float64
}

// RunDirs expands paths into run folders: a path holding result.json is
// one run; a folder holding run folders (an experiment) is each of them.
func RunDirs(paths []string) ([]string, error) {
	var dirs []string
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(p, runlog.ResultFile)); err == nil {
			dirs = append(dirs, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		n := len(dirs)
		for _, e := range entries {
			sub := filepath.Join(p, e.Name())
			if _, err := os.Stat(filepath.Join(sub, runlog.ResultFile)); e.IsDir() && err == nil {
				dirs = append(dirs, sub)
			}
		}
		if len(dirs) == n {
			return nil, fmt.Errorf("plot: %s is neither a run folder (no %s) nor an experiment folder holding runs", p, runlog.ResultFile)
		}
	}
	return dirs, nil
}

// Curves reads the x and metric columns of each run folder. A metric
// missing from a run is an error listing the keys it has.
func Curves(dirs []string, opts Options) ([]Curve, error) {
	opts = withDefaults(opts)
	var curves []Curve
	for _, d := range dirs {
		results, err := runlog.ReadResults(d)
		if err != nil {
			return nil, err
		}
		c := Curve{Label: filepath.Base(d)}
		var keys map[string]any
		for _, r := range results {
			flat := runlog.Flatten(r)
			keys = flat
			x, okx := runlog.Numeric(flat[opts.X])
			y, oky := runlog.Numeric(flat[opts.Metric])
			if okx && oky {
				c.X, c.Y = append(c.X, x), append(c.Y, y)
			}
		}
		if len(c.X) == 0 {
			if keys == nil {
				return nil, fmt.Errorf("plot: %s has no results yet", d)
			}
			return nil, fmt.Errorf("plot: %s has no numeric %q and %q; its keys: %s", d, opts.X, opts.Metric, strings.Join(runlog.NumericKeys(keys), ", "))
		}
		curves = append(curves, c)
	}
	return curves, nil
}

// Save draws curves into file; the extension picks the format (.png, .svg,
// .pdf, .jpg).
func Save(curves []Curve, file string, opts Options) error {
	opts = withDefaults(opts)
	if len(curves) == 0 {
		return errors.New("plot: no curves to draw")
	}
	p := plot.New()
	p.Title.Text = opts.Title
	p.X.Label.Text = opts.X
	p.Y.Label.Text = opts.Metric
	p.Add(plotter.NewGrid())
	p.Legend.Top = false
	p.Legend.Left = false
	for i, c := range curves {
		xys := make(plotter.XYs, len(c.X))
		for j := range c.X {
			xys[j].X, xys[j].Y = c.X[j], c.Y[j]
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("plot: %s: %w", c.Label, err)
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		if len(curves) > 1 || c.Label != "" {
			p.Legend.Add(c.Label, line)
		}
	}
	p.BackgroundColor = color.White
	if err := p.Save(vg.Length(opts.Width)*vg.Inch, vg.Length(opts.Height)*vg.Inch, file); err != nil {
		return fmt.Errorf("plot: saving %s: %w (use a .png, .svg or .pdf name)", file, err)
	}
	return nil
}

func withDefaults(o Options) Options {
	if o.Metric == "" {
		o.Metric = "episode_reward_mean"
	}
	if o.X == "" {
		o.X = "timesteps_total"
	}
	if o.Title == "" {
		o.Title = o.Metric
	}
	if o.Width <= 0 {
		o.Width = 8
	}
	if o.Height <= 0 {
		o.Height = 5
	}
	return o
}
