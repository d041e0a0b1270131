package models

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// ModelResolver builds the custom model named name (ModelOptions.CustomModel,
// which starts with the prefix the resolver was registered for) for
// observations of obsShape (after preprocessing) with numOutputs outputs.
// opts.Value asks for a value output, as for the catalog's own models. A
// model that holds outside resources (a plugin process) should implement
// io.Closer; CloseModel calls it.
type ModelResolver func(name string, obsShape []int, numOutputs int, opts ModelOptions, seed uint64) (Model, error)

// The resolvers are package-level, like the environment registry, so that
// driver and worker processes, which run the same executable, agree.
var modelResolvers = struct {
	sync.RWMutex
	byPrefix map[string]ModelResolver
}{byPrefix: map[string]ModelResolver{}}

// RegisterModelResolver routes every custom_model name starting with prefix
// (such as "plugin:") to r. Registering a prefix again replaces r.
func RegisterModelResolver(prefix string, r ModelResolver) {
	modelResolvers.Lock()
	defer modelResolvers.Unlock()
	modelResolvers.byPrefix[prefix] = r
}

// ModelResolverPrefixes lists the registered custom model prefixes, sorted.
func ModelResolverPrefixes() []string {
	modelResolvers.RLock()
	defer modelResolvers.RUnlock()
	out := make([]string, 0, len(modelResolvers.byPrefix))
	for p := range modelResolvers.byPrefix {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// newCustomModel builds opts.CustomModel through the resolver of its
// prefix (the longest registered prefix that matches).
func newCustomModel(obsShape []int, numOutputs int, opts ModelOptions, seed uint64) (Model, error) {
	name := opts.CustomModel
	modelResolvers.RLock()
	var r ModelResolver
	best := -1
	for p, f := range modelResolvers.byPrefix {
		if strings.HasPrefix(name, p) && len(p) > best {
			r, best = f, len(p)
		}
	}
	modelResolvers.RUnlock()
	if r == nil {
		known := ModelResolverPrefixes()
		if len(known) == 0 {
			return nil, fmt.Errorf("models: custom_model %q: no custom model resolver is registered (a model plugin is named plugin:<path> and needs package plugins)", name)
		}
		return nil, fmt.Errorf("models: custom_model %q: unknown prefix; known prefixes: %s (a model plugin is plugin:<path>)",
			name, strings.Join(known, ", "))
	}
	m, err := r(name, obsShape, numOutputs, opts, seed)
	if err != nil {
		return nil, fmt.Errorf("models: custom_model %q: %w", name, err)
	}
	if m == nil {
		return nil, fmt.Errorf("models: custom_model %q: the resolver returned no model", name)
	}
	if m.NumOutputs() != numOutputs {
		err := fmt.Errorf("models: custom_model %q has %d outputs; %d are needed", name, m.NumOutputs(), numOutputs)
		_ = CloseModel(m)
		return nil, err
	}
	return m, nil
}

// CloseModel releases what m holds outside the process's memory when it
// implements io.Closer (a model plugin's process) and does nothing
// otherwise. Agents call it for every model they built when they stop.
func CloseModel(m Model) error {
	if c, ok := m.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
