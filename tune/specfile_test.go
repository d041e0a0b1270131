package tune

import (
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"
)

// parseExperimentFile reads experiment specs from YAML for the tests: one
// spec, or a map of names to specs. Programs read experiment files with
// platform/config and hand the keys to SpecFromMap.
func parseExperimentFile(data []byte) ([]*ExperimentSpec, error) {
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("tune: experiment file is not valid YAML or JSON: %w", err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("tune: experiment file is empty")
	}
	raw = normalizeYAML(raw).(map[string]any)
	var specs []*ExperimentSpec
	single := false
	for _, k := range []string{"run", "alg", "env", "config"} {
		if _, ok := raw[k]; ok {
			single = true
		}
	}
	if single {
		s, err := SpecFromMap("", raw)
		if err != nil {
			return nil, err
		}
		return []*ExperimentSpec{s}, nil
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		m, ok := raw[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("tune: experiment %q must be a map of settings (run, env, config, ...), got %s", name, show(raw[name]))
		}
		s, err := SpecFromMap(name, m)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	return specs, nil
}
