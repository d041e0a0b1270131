package envs

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gray-ml/gray/internal/suggest"
)

// Config carries an environment's construction options (the "env_config"
// of an experiment). It may be nil. Make and MakeVector hand creators a
// normalized copy whose values have documented types: see NormalizeConfig.
type Config map[string]any

// Creator makes one environment instance.
type Creator func(cfg Config) (Env, error)

// VectorCreator makes a Vector of n sub-environments directly, for
// environments (plugins) that step batches natively.
type VectorCreator func(cfg Config, n int) (Vector, error)

// Resolver turns a name with a registered prefix (such as "plugin:") into a
// VectorCreator. It returns an error naming the cause when it cannot.
type Resolver func(name string) (VectorCreator, error)

// The registry is package-level so that driver and worker processes, which
// run the same executable, agree on every name.
var registry = struct {
	sync.RWMutex
	creators  map[string]Creator
	vectors   map[string]VectorCreator
	resolvers map[string]Resolver
}{
	creators:  map[string]Creator{},
	vectors:   map[string]VectorCreator{},
	resolvers: map[string]Resolver{},
}

// Register makes name resolve to creator. Registering a name twice panics,
// as it is a programming error caught at start-up.
func Register(name string, creator Creator) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.creators[name]; dup {
		panic(fmt.Sprintf("envs: environment %q registered twice", name))
	}
	registry.creators[name] = creator
}

// RegisterVector makes name resolve to a natively batched environment.
func RegisterVector(name string, creator VectorCreator) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.vectors[name]; dup {
		panic(fmt.Sprintf("envs: vector environment %q registered twice", name))
	}
	registry.vectors[name] = creator
}

// RegisterResolver routes every name starting with prefix to r.
func RegisterResolver(prefix string, r Resolver) {
	registry.Lock()
	defer registry.Unlock()
	registry.resolvers[prefix] = r
}

// Names lists the registered environment names, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.creators)+len(registry.vectors))
	for n := range registry.creators {
		names = append(names, n)
	}
	for n := range registry.vectors {
		if _, ok := registry.creators[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// canonical maps a name to the registered one it means: itself, the same
// name in another case ("cartpole-v1" is "CartPole-v1"), or, for a bare
// family name ("CartPole"), its latest registered version ("CartPole-v1").
// A name it cannot place is returned unchanged. The caller holds the
// registry's lock.
func canonical(name string) string {
	if _, ok := registry.creators[name]; ok {
		return name
	}
	if _, ok := registry.vectors[name]; ok {
		return name
	}
	folded := ""
	best, bestVer := "", -1
	consider := func(n string) {
		if strings.EqualFold(n, name) && (folded == "" || n < folded) {
			folded = n
		}
		var ver int
		if fam, v, ok := strings.Cut(n, "-v"); ok && strings.EqualFold(fam, name) {
			if _, err := fmt.Sscan(v, &ver); err == nil && ver > bestVer {
				best, bestVer = n, ver
			}
		}
	}
	// Natively batched environments have versions too.
	for n := range registry.creators {
		consider(n)
	}
	for n := range registry.vectors {
		consider(n)
	}
	switch {
	case folded != "":
		return folded
	case best != "":
		return best
	}
	return name
}

// Canonical returns the registered name that name means (see Make): the
// same name in the registered case, or a bare family name's latest
// version. Names it cannot place, plugin references among them, are
// returned unchanged.
func Canonical(name string) string {
	registry.RLock()
	defer registry.RUnlock()
	return canonical(name)
}

// Check reports whether name resolves to an environment without creating
// one: a registered name (in any case, or a bare family name), or a
// prefixed reference whose resolver accepts it (for plugin:<path>, an
// executable file). The error names the cause; for an unknown name it
// suggests the closest known one.
func Check(name string) error {
	registry.RLock()
	canon := canonical(name)
	_, isEnv := registry.creators[canon]
	registry.RUnlock()
	if isEnv {
		return nil
	}
	vc, err := vectorCreator(name)
	if err != nil {
		return err
	}
	if vc == nil {
		return unknown(name)
	}
	return nil
}

// Make creates one instance of the named environment. A name with only a
// VectorCreator (registered with RegisterVector or routed by a resolver's
// prefix, such as "plugin:<path>") is made as a Vector of one
// sub-environment adapted by SingleEnv, so every algorithm can take it.
func Make(name string, cfg Config) (Env, error) {
	cfg, err := NormalizeConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("envs: creating %q: %w", name, err)
	}
	registry.RLock()
	c, ok := registry.creators[canonical(name)]
	registry.RUnlock()
	if !ok {
		vc, err := vectorCreator(name)
		if err != nil {
			return nil, err
		}
		if vc == nil {
			return nil, unknown(name)
		}
		v, err := vc(cfg, 1)
		if err != nil {
			return nil, fmt.Errorf("envs: creating %q: %w", name, err)
		}
		env, err := SingleEnv(v)
		if err != nil {
			_ = v.Close()
			return nil, fmt.Errorf("envs: creating %q: %w", name, err)
		}
		return env, nil
	}
	env, err := c(cfg)
	if err != nil {
		return nil, fmt.Errorf("envs: creating %q: %w", name, err)
	}
	return env, nil
}

// vectorCreator finds the VectorCreator for name: registered for its
// canonical name, or built by the resolver of its prefix. It returns nil
// and no error when there is neither, and the resolver's error when it
// cannot resolve the name.
func vectorCreator(name string) (VectorCreator, error) {
	registry.RLock()
	vc, ok := registry.vectors[canonical(name)]
	var resolver Resolver
	if !ok {
		for prefix, r := range registry.resolvers {
			if strings.HasPrefix(name, prefix) {
				resolver = r
				break
			}
		}
	}
	registry.RUnlock()
	if ok {
		return vc, nil
	}
	if resolver == nil {
		return nil, nil
	}
	return resolver(name)
}

// MakeVector creates a Vector of n copies of the named environment: natively
// batched when the name (or its prefix) has a VectorCreator, otherwise n
// instances from its Creator stepped in turn.
func MakeVector(name string, cfg Config, n int) (Vector, error) {
	if n < 1 {
		return nil, fmt.Errorf("envs: MakeVector(%q): need at least one sub-environment, got %d", name, n)
	}
	cfg, err := NormalizeConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("envs: creating %q: %w", name, err)
	}
	vc, err := vectorCreator(name)
	if err != nil {
		return nil, err
	}
	if vc != nil {
		v, err := vc(cfg, n)
		if err != nil {
			return nil, fmt.Errorf("envs: creating %d × %q: %w", n, name, err)
		}
		return v, nil
	}
	registry.RLock()
	canon := canonical(name)
	_, known := registry.creators[canon]
	registry.RUnlock()
	if !known {
		return nil, unknown(name)
	}
	return newSerialVector(canon, cfg, n)
}

func unknown(name string) error {
	names := Names()
	return fmt.Errorf("envs: unknown environment %q%s; known environments: %s (or plugin:<path> for a plugin)",
		name, suggest.DidYouMean(name, names), strings.Join(names, ", "))
}

// FrameSkipper is implemented by environments whose step emulates several
// frames (PixelPong-v0's frameskip).
type FrameSkipper interface {
	FramesPerStep() int
}

// FramesPerStep returns how many frames one step of the named environment
// emulates with cfg: its FramesPerStep for a registered FrameSkipper, 1 for
// every other environment (plugins are not started to find out).
func FramesPerStep(name string, cfg Config) int {
	registry.RLock()
	c, ok := registry.creators[canonical(name)]
	registry.RUnlock()
	if !ok {
		return 1
	}
	env, err := c(cfg)
	if err != nil {
		return 1
	}
	defer env.Close()
	if fs, ok := env.(FrameSkipper); ok {
		return max(fs.FramesPerStep(), 1)
	}
	return 1
}
