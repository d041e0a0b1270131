package models

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/gray-ml/gray/spaces"
)

// DistResolver builds the custom action distribution named name
// (ModelOptions.CustomActionDist, which starts with the prefix the resolver
// was registered for) over actionSpace, with options from
// ModelOptions.CustomActionDistOptions. A distribution that holds outside
// resources (a plugin process) should implement io.Closer;
// CloseActionDist calls it.
type DistResolver func(name string, actionSpace spaces.Space, options map[string]any) (ActionDist, error)

// The resolvers are package-level, like the model resolvers, so that
// driver and worker processes, which run the same executable, agree.
var distResolvers = struct {
	sync.RWMutex
	byPrefix map[string]DistResolver
}{byPrefix: map[string]DistResolver{}}

// RegisterDistResolver routes every custom_action_dist name starting with
// prefix (such as "plugin:") to r. Registering a prefix again replaces r.
func RegisterDistResolver(prefix string, r DistResolver) {
	distResolvers.Lock()
	defer distResolvers.Unlock()
	distResolvers.byPrefix[prefix] = r
}

// DistResolverPrefixes lists the registered custom distribution prefixes,
// sorted.
func DistResolverPrefixes() []string {
	distResolvers.RLock()
	defer distResolvers.RUnlock()
	out := make([]string, 0, len(distResolvers.byPrefix))
	for p := range distResolvers.byPrefix {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// NewActionDist returns the action distribution a model config asks for
// over space: the custom distribution opts.CustomActionDist when set (built
// by the DistResolver registered for its prefix, such as "plugin:<path>"),
// otherwise the catalog's default, ActionDistFor(space, ""). A custom
// distribution must take actions of the space's size.
func NewActionDist(space spaces.Space, opts ModelOptions) (ActionDist, error) {
	name := opts.CustomActionDist
	if name == "" {
		return ActionDistFor(space, "")
	}
	distResolvers.RLock()
	var r DistResolver
	best := -1
	for p, f := range distResolvers.byPrefix {
		if strings.HasPrefix(name, p) && len(p) > best {
			r, best = f, len(p)
		}
	}
	distResolvers.RUnlock()
	if r == nil {
		known := DistResolverPrefixes()
		if len(known) == 0 {
			return nil, fmt.Errorf("models: custom_action_dist %q: no custom distribution resolver is registered (a distribution plugin is named plugin:<path> and needs package plugins)", name)
		}
		return nil, fmt.Errorf("models: custom_action_dist %q: unknown prefix; known prefixes: %s (a distribution plugin is plugin:<path>)",
			name, strings.Join(known, ", "))
	}
	d, err := r(name, space, opts.CustomActionDistOptions)
	if err != nil {
		return nil, fmt.Errorf("models: custom_action_dist %q: %w", name, err)
	}
	if d == nil {
		return nil, fmt.Errorf("models: custom_action_dist %q: the resolver returned no distribution", name)
	}
	if d.InputSize() <= 0 || d.ActionSize() != space.Size() {
		err := fmt.Errorf("models: custom_action_dist %q takes %d inputs and actions of %d values; action space %v needs actions of %d values and at least one input",
			name, d.InputSize(), d.ActionSize(), space, space.Size())
		_ = CloseActionDist(d)
		return nil, err
	}
	return d, nil
}

// CloseActionDist releases what d holds outside the process's memory when
// it implements io.Closer (a distribution plugin's process) and does
// nothing otherwise. Agents call it for every distribution they built when
// they stop.
func CloseActionDist(d ActionDist) error {
	if c, ok := d.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
