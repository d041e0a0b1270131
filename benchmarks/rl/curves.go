package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"

	"github.com/gray-ml/gray/platform/plot"
)

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

// plotCurves draws the curves of the CSV files (one line per label and
// seed) into out with the platform's plotter.
func plotCurves(out, title string, files []string) error {
	var curves []plot.Curve
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
			key := r[0] + ", seed " + r[1]
			k, ok := index[key]
			if !ok {
				k = len(curves)
				index[key] = k
				curves = append(curves, plot.Curve{Label: key})
			}
			curves[k].X = append(curves[k].X, x)
			curves[k].Y = append(curves[k].Y, y)
		}
	}
	return plot.Save(curves, out, plot.Options{Title: title, Width: 7, Height: 4.5})
}
