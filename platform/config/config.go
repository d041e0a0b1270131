// Package config loads experiments: a YAML (or JSON) experiment file given
// with -f, command-line flags with the same keys, and JSON strings for
// --config and --stop. Flags override the file; viper does the layering
// (flag, then the GRAY_LOCAL_DIR environment variable for local_dir, then
// the file, then the flag's default).
//
// Every error says where: a file name with line and column and the
// offending line, or the flag with the byte offset and a caret under the
// offending character.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gray-ml/gray/internal/numeric"
	"github.com/gray-ml/gray/internal/suggest"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"
)

// Experiment is one training run as the user describes it.
type Experiment struct {
	// Name is the experiment folder under LocalDir.
	Name string `json:"name"`
	// Env and Alg name the environment and algorithm (registered names or
	// plugin references). The file may say run instead of alg, as Ray's
	// experiment files do.
	Env string `json:"env"`
	Alg string `json:"alg"`
	// Config is the algorithm's configuration as given (keys not given take
	// the algorithm's defaults).
	Config map[string]any `json:"config,omitempty"`
	// EnvConfig is passed to the environment's creator.
	EnvConfig map[string]any `json:"env_config,omitempty"`
	// Stop ends the run when any result key reaches its value.
	Stop Stop `json:"stop,omitempty"`
	// CheckpointFreq saves a checkpoint every that many iterations (0: never).
	CheckpointFreq int `json:"checkpoint_freq"`
	// CheckpointAtEnd saves a checkpoint when the run ends.
	CheckpointAtEnd bool `json:"checkpoint_at_end"`
	// Restore is a checkpoint to start from.
	Restore string `json:"restore,omitempty"`
	// LocalDir holds the experiment folders.
	LocalDir string `json:"local_dir"`
	// Seed makes runs reproducible.
	Seed int64 `json:"seed"`
	// NumCPUs is the number of CPUs the runtime may use (0: all).
	NumCPUs int `json:"num_cpus"`
	// PluginCallTimeoutS bounds each call to a plugin, in seconds (0: the
	// plugins package's default, 60 s).
	PluginCallTimeoutS float64 `json:"plugin_call_timeout_s"`
	// Extra holds the values of keys the caller allowed besides these
	// (Tune's num_samples, scheduler, ...), as decoded from the file.
	Extra map[string]any `json:"-"`
	// File is the experiment file read, if any.
	File string `json:"-"`

	set map[string]bool // keys the file set
}

// Keys are the top-level keys of an experiment file; "run" is a synonym of
// "alg". Each is also a flag, with dashes for underscores.
var Keys = []string{"name", "env", "alg", "run", "config", "env_config", "stop", "checkpoint_freq",
	"checkpoint_at_end", "restore", "local_dir", "seed", "num_cpus", "plugin_call_timeout_s"}

// DefaultLocalDir is where runs go unless told otherwise.
const DefaultLocalDir = "~/gray_results"

// DefaultName is the experiment name unless told otherwise.
const DefaultName = "default"

// FileFlag is the name of the flag naming the experiment file.
const FileFlag = "file"

// AddFlags defines the experiment's flags on fs: one per key (with dashes),
// plus -f/--file.
func AddFlags(fs *pflag.FlagSet) {
	fs.StringP(FileFlag, "f", "", "experiment file (YAML or JSON) with the same keys as these flags")
	fs.String("name", DefaultName, "experiment name: runs go to <local-dir>/<name>/")
	fs.String("env", "", "environment name (e.g. CartPole-v1) or plugin:<path>")
	fs.String("alg", "", "algorithm name (e.g. PPO) or plugin:<path>")
	fs.String("run", "", "synonym of --alg")
	fs.MarkHidden("run")
	fs.String("config", "", `algorithm config as a JSON object, e.g. '{"lr": 0.001}'; merged over the file's config`)
	fs.String("env-config", "", "environment config as a JSON object")
	fs.String("stop", "", `stop criteria as a JSON object, e.g. '{"episode_reward_mean": 475, "timesteps_total": 500000}'`)
	fs.Int("checkpoint-freq", 0, "save a checkpoint every N iterations (0: never)")
	fs.Bool("checkpoint-at-end", false, "save a checkpoint when the run ends")
	fs.String("restore", "", "checkpoint to restore before training")
	fs.String("local-dir", DefaultLocalDir, "folder for experiment results (env GRAY_LOCAL_DIR)")
	fs.Int64("seed", 0, "random seed: same seed, same run")
	fs.Int("num-cpus", 0, "CPUs the runtime may use (0: all, or num_workers + 1 where num_workers is more than that, up to 16 times the CPUs: the workers then take turns on the cores; with --restore and rollout, the checkpoint's num_workers)")
	fs.Float64("plugin-call-timeout-s", 0, "seconds a plugin may take to answer a call before it is killed (0: 60)")
}

// Resolve builds the experiment from the flags in fs (defined by AddFlags)
// and the file -f names, if any. Flags the user set override the file;
// --config and --stop are merged key by key over the file's maps (nested
// objects such as model merge too). extraKeys are further top-level keys
// the file may hold; they are returned in Extra.
func Resolve(fs *pflag.FlagSet, extraKeys ...string) (Experiment, error) {
	var exp Experiment
	file, _ := fs.GetString(FileFlag)
	if file != "" {
		var err error
		if exp, err = LoadFile(file, extraKeys...); err != nil {
			return Experiment{}, err
		}
	}
	if fs.Changed("run") && fs.Changed("alg") {
		a, _ := fs.GetString("alg")
		r, _ := fs.GetString("run")
		if a != r {
			return Experiment{}, fmt.Errorf("--alg %s and --run %s disagree: give one", a, r)
		}
	}

	// The file's values go in only for the keys it sets, so that a key it
	// leaves out falls through to the flag's default.
	v := viper.New()
	fileVals := map[string]any{
		"name": exp.Name, "env": exp.Env, "alg": exp.Alg, "checkpoint_freq": exp.CheckpointFreq,
		"checkpoint_at_end": exp.CheckpointAtEnd, "restore": exp.Restore, "local_dir": exp.LocalDir,
		"seed": exp.Seed, "num_cpus": exp.NumCPUs, "plugin_call_timeout_s": exp.PluginCallTimeoutS,
	}
	for k := range fileVals {
		if !exp.set[k] {
			delete(fileVals, k)
		}
	}
	v.MergeConfigMap(fileVals)
	for _, k := range []string{"name", "env", "alg", "checkpoint_freq", "checkpoint_at_end", "restore", "local_dir", "seed", "num_cpus", "plugin_call_timeout_s"} {
		if err := v.BindPFlag(k, fs.Lookup(strings.ReplaceAll(k, "_", "-"))); err != nil {
			return Experiment{}, fmt.Errorf("config: %w", err)
		}
	}
	if fs.Changed("run") && !fs.Changed("alg") {
		v.BindPFlag("alg", fs.Lookup("run"))
	}
	v.BindEnv("local_dir", "GRAY_LOCAL_DIR")

	exp.Name = v.GetString("name")
	if exp.Name == "" {
		exp.Name = DefaultName
	}
	exp.Env = v.GetString("env")
	exp.Alg = v.GetString("alg")
	exp.CheckpointFreq = v.GetInt("checkpoint_freq")
	exp.CheckpointAtEnd = v.GetBool("checkpoint_at_end")
	exp.Restore = ExpandHome(v.GetString("restore"))
	exp.LocalDir = v.GetString("local_dir")
	if exp.LocalDir == "" {
		exp.LocalDir = DefaultLocalDir
	}
	exp.LocalDir = ExpandHome(exp.LocalDir)
	exp.Seed = v.GetInt64("seed")
	exp.NumCPUs = v.GetInt("num_cpus")
	exp.PluginCallTimeoutS = v.GetFloat64("plugin_call_timeout_s")

	for _, f := range []struct {
		flag string
		dst  *map[string]any
	}{{"config", &exp.Config}, {"env-config", &exp.EnvConfig}} {
		if !fs.Changed(f.flag) {
			continue
		}
		s, _ := fs.GetString(f.flag)
		m, err := ParseJSONObject("--"+f.flag, s)
		if err != nil {
			return Experiment{}, err
		}
		*f.dst = DeepMerge(*f.dst, m)
	}
	if fs.Changed("stop") {
		s, _ := fs.GetString("stop")
		m, err := ParseJSONObject("--stop", s)
		if err != nil {
			return Experiment{}, err
		}
		stop, err := StopFromMap("--stop", m)
		if err != nil {
			return Experiment{}, err
		}
		if exp.Stop == nil {
			exp.Stop = Stop{}
		}
		for k, val := range stop {
			exp.Stop[k] = val
		}
	}
	if exp.CheckpointFreq < 0 {
		return Experiment{}, fmt.Errorf("checkpoint_freq must be 0 (never) or more, got %d", exp.CheckpointFreq)
	}
	if exp.NumCPUs < 0 {
		return Experiment{}, fmt.Errorf("num_cpus must be 0 (all) or more, got %d", exp.NumCPUs)
	}
	if t := exp.PluginCallTimeoutS; t < 0 || math.IsNaN(t) || math.IsInf(t, 0) {
		return Experiment{}, fmt.Errorf("plugin_call_timeout_s must be 0 (the default, 60) or a positive number of seconds, got %v", t)
	}
	return exp, nil
}

// LoadFile reads an experiment file. Its top level is a mapping of Keys
// (and extraKeys); the Ray form, one experiment name mapping to those keys,
// is accepted too.
func LoadFile(path string, extraKeys ...string) (Experiment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Experiment{}, fmt.Errorf("experiment file: %w", err)
	}
	exp, err := Parse(data, path, extraKeys...)
	if err != nil {
		return Experiment{}, err
	}
	exp.File = path
	return exp, nil
}

// Parse decodes an experiment from YAML or JSON; name labels errors.
func Parse(data []byte, name string, extraKeys ...string) (Experiment, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Experiment{}, yamlError(name, data, err)
	}
	if len(doc.Content) == 0 {
		return Experiment{}, fmt.Errorf("%s is empty: give at least env and alg (known keys: %s)", name, strings.Join(Keys, ", "))
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return Experiment{}, posError(name, data, root, "the experiment must be a mapping of keys (%s)", strings.Join(Keys, ", "))
	}
	known := map[string]bool{}
	for _, k := range Keys {
		known[k] = true
	}
	for _, k := range extraKeys {
		known[k] = true
	}
	var exp Experiment
	// Ray's form: {my-experiment: {env: ..., run: ...}}.
	if len(root.Content) == 2 && !known[root.Content[0].Value] && root.Content[1].Kind == yaml.MappingNode {
		exp.Name = root.Content[0].Value
		exp.set = map[string]bool{"name": true}
		root = root.Content[1]
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		kn, vn := root.Content[i], root.Content[i+1]
		key := kn.Value
		if !known[key] {
			all := append(append([]string(nil), Keys...), extraKeys...)
			return Experiment{}, posError(name, data, kn, "unknown key %q%s; known keys: %s", key, suggest.DidYouMean(key, all), strings.Join(all, ", "))
		}
		if exp.set == nil {
			exp.set = map[string]bool{}
		}
		exp.set[key] = true
		if key == "run" {
			exp.set["alg"] = true
		}
		var err error
		switch key {
		case "name":
			err = decodeScalar(name, data, key, vn, &exp.Name, "a string")
		case "env":
			err = decodeScalar(name, data, key, vn, &exp.Env, "a string")
		case "alg", "run":
			var a string
			err = decodeScalar(name, data, key, vn, &a, "a string")
			if err == nil && exp.Alg != "" && exp.Alg != a {
				err = posError(name, data, kn, "alg and run disagree (%s, %s): give one", exp.Alg, a)
			}
			exp.Alg = a
		case "config":
			err = decodeMap(name, data, key, vn, &exp.Config)
		case "env_config":
			err = decodeMap(name, data, key, vn, &exp.EnvConfig)
		case "stop":
			var m map[string]any
			if err = decodeMap(name, data, key, vn, &m); err == nil {
				for j := 0; j+1 < len(vn.Content); j += 2 {
					if _, ok := toFloat(m[vn.Content[j].Value]); !ok {
						return Experiment{}, posError(name, data, vn.Content[j+1], "stop criterion %q must be a number, got %q", vn.Content[j].Value, vn.Content[j+1].Value)
					}
				}
				exp.Stop, err = StopFromMap(name, m)
			}
		case "checkpoint_freq":
			err = decodeScalar(name, data, key, vn, &exp.CheckpointFreq, "an integer")
		case "checkpoint_at_end":
			err = decodeScalar(name, data, key, vn, &exp.CheckpointAtEnd, "a boolean (true or false)")
		case "restore":
			err = decodeScalar(name, data, key, vn, &exp.Restore, "a string")
		case "local_dir":
			err = decodeScalar(name, data, key, vn, &exp.LocalDir, "a string")
		case "seed":
			err = decodeScalar(name, data, key, vn, &exp.Seed, "an integer")
		case "num_cpus":
			err = decodeScalar(name, data, key, vn, &exp.NumCPUs, "an integer")
		case "plugin_call_timeout_s":
			err = decodeScalar(name, data, key, vn, &exp.PluginCallTimeoutS, "a number of seconds")
		default:
			var x any
			if err = vn.Decode(&x); err != nil {
				err = posError(name, data, vn, "%s: %v", key, err)
			}
			if exp.Extra == nil {
				exp.Extra = map[string]any{}
			}
			exp.Extra[key] = x
		}
		if err != nil {
			return Experiment{}, err
		}
	}
	return exp, nil
}

func decodeScalar(name string, data []byte, key string, n *yaml.Node, dst any, want string) error {
	if n.Kind != yaml.ScalarNode || n.Decode(dst) != nil {
		got := n.Value
		if n.Kind != yaml.ScalarNode {
			got = map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list"}[n.Kind]
		}
		return posError(name, data, n, "%s must be %s, got %s", key, want, quoteScalar(n, got))
	}
	return nil
}

func decodeMap(name string, data []byte, key string, n *yaml.Node, dst *map[string]any) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return posError(name, data, n, "%s must be a mapping of keys to values, got %s", key, quoteScalar(n, n.Value))
	}
	if err := n.Decode(dst); err != nil {
		return posError(name, data, n, "%s: %v", key, err)
	}
	return nil
}

func quoteScalar(n *yaml.Node, s string) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// posError formats an error at n's position with the offending line.
func posError(name string, data []byte, n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d:%d: %s\n%s", name, n.Line, n.Column, fmt.Sprintf(format, args...), snippet(data, n.Line, n.Column))
}

// yamlError adds the file name and the offending line to a yaml.v3 error,
// which says "yaml: line N: ...".
func yamlError(name string, data []byte, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		rest := strings.TrimSpace(msg[strings.IndexByte(msg, ':')+1:])
		return fmt.Errorf("%s:%d: malformed YAML: %s\n%s", name, line, rest, snippet(data, line, 0))
	}
	return fmt.Errorf("%s: malformed YAML: %s", name, msg)
}

// snippet shows line (1-based) of data with a caret under column (1-based;
// 0 for none).
func snippet(data []byte, line, column int) string {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	text := strings.TrimRight(lines[line-1], "\r")
	prefix := fmt.Sprintf("  %4d | ", line)
	s := prefix + text
	if column > 0 {
		s += "\n" + strings.Repeat(" ", len(prefix)+column-1) + "^"
	}
	return s
}

// ParseJSONObject decodes a JSON object given on the command line. Numbers
// keep their literal form (json.Number), so an integer stays an integer
// through to the algorithm's config. A malformed string is an error naming
// the flag, the byte offset and the character there.
func ParseJSONObject(flag, s string) (map[string]any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	err := d.Decode(&m)
	if err == nil && d.More() {
		off := int(d.InputOffset())
		return nil, fmt.Errorf("%s: malformed JSON: unexpected text after the object at byte %d\n%s", flag, off, caret(s, off))
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		if m == nil {
			return nil, fmt.Errorf("%s must be a JSON object like '{\"lr\": 0.001}', got null", flag)
		}
		return m, nil
	case errors.As(err, &syn):
		off := int(syn.Offset) - 1
		if off < 0 {
			off = 0
		}
		return nil, fmt.Errorf("%s: malformed JSON at byte %d: %v\n%s", flag, off, syn, caret(s, off))
	case errors.As(err, &typ):
		return nil, fmt.Errorf("%s must be a JSON object like '{\"lr\": 0.001}', got a JSON %s", flag, typ.Value)
	case strings.TrimSpace(s) == "":
		return nil, fmt.Errorf("%s is empty: give a JSON object like '{\"lr\": 0.001}'", flag)
	default:
		return nil, fmt.Errorf("%s: malformed JSON: %v (is it cut short?)\n%s", flag, err, caret(s, len(s)))
	}
}

func caret(s string, off int) string {
	if off > len(s) {
		off = len(s)
	}
	return "  " + s + "\n  " + strings.Repeat(" ", off) + "^"
}

// DeepMerge returns base with over's keys set over it; nested objects merge
// key by key. Neither input is modified.
func DeepMerge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = DeepMerge(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// ExpandHome replaces a leading ~ with the user's home folder.
func ExpandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// Stop holds stop criteria: the run ends once any result key reaches (>=)
// its value. Keys are flat result keys (info/learner/kl for nested ones);
// training_iteration and time_total_s are result keys like any other.
type Stop map[string]float64

// StopFromMap checks that every criterion is a finite number.
func StopFromMap(where string, m map[string]any) (Stop, error) {
	s := Stop{}
	for k, v := range m {
		f, ok := toFloat(v)
		if !ok {
			return nil, fmt.Errorf("%s: stop criterion %q must be a number, got %#v", where, k, v)
		}
		if math.IsNaN(f) {
			return nil, fmt.Errorf("%s: stop criterion %q is NaN", where, k)
		}
		s[k] = f
	}
	return s, nil
}

// Met reports the first criterion (in key order) that result, a flat
// result, meets.
func (s Stop) Met(result map[string]any) (string, bool) {
	for _, k := range s.keys() {
		if v, ok := toFloat(result[k]); ok && v >= s[k] {
			return k, true
		}
	}
	return "", false
}

// Missing lists the criteria whose key result lacks: a criterion that can
// never be met, worth reporting after the first result.
func (s Stop) Missing(result map[string]any) []string {
	var out []string
	for _, k := range s.keys() {
		if _, ok := toFloat(result[k]); !ok {
			out = append(out, k)
		}
	}
	return out
}

func (s Stop) keys() []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// toFloat converts any Go or JSON number to float64.
func toFloat(v any) (float64, bool) { return numeric.Float(v) }
