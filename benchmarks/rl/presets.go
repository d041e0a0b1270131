package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/platform/sweep"
)

// presetFor returns the config of the single-run experiment file in dir
// that trains alg on env (case-insensitively), and the file's path; an
// empty config and "" when there is none. Sweep files are skipped.
func presetFor(dir, alg, env string) (map[string]any, string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, "", err
	}
	sort.Strings(files)
	for _, f := range files {
		exp, err := config.LoadFile(f, sweep.Keys...)
		if err != nil {
			return nil, "", fmt.Errorf("reading the presets: %w", err)
		}
		if !strings.EqualFold(exp.Alg, alg) || !strings.EqualFold(exp.Env, env) {
			continue
		}
		if isSweep, err := sweep.IsSweep(exp); err != nil || isSweep {
			continue
		}
		return exp.Config, f, nil
	}
	return map[string]any{}, "", nil
}
