package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// curve is one seed's learning curve.
type curve struct {
	label string
	xys   plotter.XYs
}

// curveWriter appends one CSV line per training iteration: label, seed,
// timesteps_total, episode_reward_mean.
type curveWriter struct {
	f     *os.File
	w     *csv.Writer
	label string
}

func openCurve(path, label string) (*curveWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("-curve: %w", err)
	}
	return &curveWriter{f: f, w: csv.NewWriter(f), label: label}, nil
}

func (c *curveWriter) add(seed, steps int64, reward float64) error {
	if c == nil {
		return nil
	}
	err := c.w.Write([]string{c.label, strconv.FormatInt(seed, 10), strconv.FormatInt(steps, 10), strconv.FormatFloat(reward, 'f', 2, 64)})
	c.w.Flush()
	if err == nil {
		err = c.w.Error()
	}
	return err
}

func (c *curveWriter) close() error {
	if c == nil {
		return nil
	}
	return c.f.Close()
}

// plotCurves draws the curves of the CSV files into out with gonum/plot:
// one line per label and seed, every run of one label in one colour, the
// legend in the top right corner.
func plotCurves(out, title string, files []string) error {
	var curves []curve
	var labels []string
	index := map[string]int{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		rows, err := csv.NewReader(f).ReadAll()
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for i, r := range rows {
			if len(r) != 4 {
				return fmt.Errorf("%s line %d: want label,seed,steps,reward", name, i+1)
			}
			x, err1 := strconv.ParseFloat(r[2], 64)
			y, err2 := strconv.ParseFloat(r[3], 64)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("%s line %d: steps %q or reward %q is not a number", name, i+1, r[2], r[3])
			}
			key := r[0] + "\x00" + r[1]
			k, ok := index[key]
			if !ok {
				k = len(curves)
				index[key] = k
				curves = append(curves, curve{label: r[0]})
				if len(labels) == 0 || labels[len(labels)-1] != r[0] {
					labels = append(labels, r[0])
				}
			}
			curves[k].xys = append(curves[k].xys, plotter.XY{X: x, Y: y})
		}
	}
	if len(curves) == 0 {
		return fmt.Errorf("no curves in %v", files)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "environment steps"
	p.Y.Label.Text = "mean return (last 100 episodes)"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	for _, c := range curves {
		line, err := plotter.NewLine(c.xys)
		if err != nil {
			return fmt.Errorf("%s: %w", c.label, err)
		}
		for i, l := range labels {
			if l == c.label {
				line.Color = plotutil.Color(i)
			}
		}
		line.Width = vg.Points(1.2)
		p.Add(line)
		if labelled := index[c.label+"\x00labelled"]; labelled == 0 {
			index[c.label+"\x00labelled"] = 1
			p.Legend.Add(c.label+" (one line per seed)", line)
		}
	}
	p.Y.Min = math.Min(p.Y.Min, 0)
	p.Y.Max = math.Max(p.Y.Max, 500)
	return p.Save(7*vg.Inch, 4.5*vg.Inch, out)
}
