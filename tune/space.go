package tune

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/gray-ml/gray/internal/numeric"
	"github.com/gray-ml/gray/internal/suggest"
)

// Domain is a search-space leaf: something a value is sampled from. Domains
// may appear anywhere in a config (inside maps and lists).
type Domain interface {
	// Sample draws one value. spec holds the values resolved so far; only
	// SampleFrom reads it.
	Sample(rng *rand.Rand, spec Spec) (any, error)
	// MarshalJSON writes the domain in its experiment-file form, such as
	// {"uniform":[0,1]}; the search-space fingerprint used by resume is made
	// of it.
	MarshalJSON() ([]byte, error)
}

// GridSearch makes every listed value a separate variant; several grids in
// one config form their cartesian product.
type GridSearch struct{ Values []any }

// Choice samples one of Values uniformly.
type Choice struct{ Values []any }

// Uniform samples a float uniformly from [Lo, Hi).
type Uniform struct{ Lo, Hi float64 }

// QUniform samples uniformly from [Lo, Hi] and rounds to a multiple of Q.
type QUniform struct{ Lo, Hi, Q float64 }

// LogUniform samples a float whose logarithm is uniform on [log Lo, log Hi).
type LogUniform struct{ Lo, Hi float64 }

// RandInt samples an int uniformly from [Lo, Hi) (Hi excluded, as numpy's
// randint).
type RandInt struct{ Lo, Hi int }

// Normal samples a float from a normal distribution.
type Normal struct{ Mean, SD float64 }

// QNormal samples from a normal distribution and rounds to a multiple of Q.
type QNormal struct{ Mean, SD, Q float64 }

// SampleFrom computes a value from the other values of the same variant.
// In Go, set Fn; in experiment files, Expr is an arithmetic expression over
// numbers and references such as "config.lr * 2" (see ParseExpr).
type SampleFrom struct {
	Fn   func(spec Spec) (any, error)
	Expr string
	expr *exprNode
}

// Grid is shorthand for a GridSearch over values.
func Grid(values ...any) GridSearch { return GridSearch{Values: values} }

// Sample returns the first value; the variant generator expands grids itself.
func (g GridSearch) Sample(rng *rand.Rand, _ Spec) (any, error) {
	return g.Values[rng.IntN(len(g.Values))], nil
}

// Sample implements Domain.
func (c Choice) Sample(rng *rand.Rand, _ Spec) (any, error) {
	return c.Values[rng.IntN(len(c.Values))], nil
}

// Sample implements Domain.
func (u Uniform) Sample(rng *rand.Rand, _ Spec) (any, error) {
	return u.Lo + rng.Float64()*(u.Hi-u.Lo), nil
}

// Sample implements Domain.
func (q QUniform) Sample(rng *rand.Rand, _ Spec) (any, error) {
	v := q.Lo + rng.Float64()*(q.Hi-q.Lo)
	return quantize(v, q.Q, q.Lo, q.Hi), nil
}

// Sample implements Domain.
func (l LogUniform) Sample(rng *rand.Rand, _ Spec) (any, error) {
	lo, hi := math.Log(l.Lo), math.Log(l.Hi)
	return math.Exp(lo + rng.Float64()*(hi-lo)), nil
}

// Sample implements Domain.
func (r RandInt) Sample(rng *rand.Rand, _ Spec) (any, error) {
	return r.Lo + rng.IntN(r.Hi-r.Lo), nil
}

// Sample implements Domain.
func (n Normal) Sample(rng *rand.Rand, _ Spec) (any, error) {
	return n.Mean + n.SD*rng.NormFloat64(), nil
}

// Sample implements Domain.
func (n QNormal) Sample(rng *rand.Rand, _ Spec) (any, error) {
	return math.Round((n.Mean+n.SD*rng.NormFloat64())/n.Q) * n.Q, nil
}

// Sample implements Domain.
func (s SampleFrom) Sample(_ *rand.Rand, spec Spec) (any, error) {
	if s.Fn != nil {
		return s.Fn(spec)
	}
	e := s.expr
	if e == nil {
		var err error
		if e, err = ParseExpr(s.Expr); err != nil {
			return nil, err
		}
	}
	return e.eval(spec)
}

// quantize rounds v to a multiple of q, kept inside [lo, hi].
func quantize(v, q, lo, hi float64) float64 {
	r := math.Round(v/q) * q
	for r > hi+1e-12 {
		r -= q
	}
	for r < lo-1e-12 {
		r += q
	}
	// Remove float noise such as 0.30000000000000004.
	r, _ = strconv.ParseFloat(strconv.FormatFloat(r, 'g', 12, 64), 64)
	return r
}

func marshalForm(name string, v any) ([]byte, error) { return json.Marshal(map[string]any{name: v}) }

// MarshalJSON implements Domain.
func (g GridSearch) MarshalJSON() ([]byte, error) { return marshalForm("grid_search", g.Values) }

// MarshalJSON implements Domain.
func (c Choice) MarshalJSON() ([]byte, error) { return marshalForm("choice", c.Values) }

// MarshalJSON implements Domain.
func (u Uniform) MarshalJSON() ([]byte, error) { return marshalForm("uniform", []float64{u.Lo, u.Hi}) }

// MarshalJSON implements Domain.
func (q QUniform) MarshalJSON() ([]byte, error) {
	return marshalForm("quniform", []float64{q.Lo, q.Hi, q.Q})
}

// MarshalJSON implements Domain.
func (l LogUniform) MarshalJSON() ([]byte, error) {
	return marshalForm("loguniform", []float64{l.Lo, l.Hi})
}

// MarshalJSON implements Domain.
func (r RandInt) MarshalJSON() ([]byte, error) { return marshalForm("randint", []int{r.Lo, r.Hi}) }

// MarshalJSON implements Domain.
func (n Normal) MarshalJSON() ([]byte, error) { return marshalForm("normal", []float64{n.Mean, n.SD}) }

// MarshalJSON implements Domain.
func (n QNormal) MarshalJSON() ([]byte, error) {
	return marshalForm("qnormal", []float64{n.Mean, n.SD, n.Q})
}

// MarshalJSON implements Domain. A Go function cannot be written down, so
// its form only says that it is one; changing it is not detected by resume.
func (s SampleFrom) MarshalJSON() ([]byte, error) {
	if s.Fn != nil {
		return marshalForm("sample_from", "<go func>")
	}
	return marshalForm("sample_from", s.Expr)
}

// Spec is a variant's configuration while it is being resolved; SampleFrom
// functions read the values sampled so far from it.
type Spec map[string]any

// Get returns the value at a dotted path such as "model.hidden" (a leading
// "config." is allowed), and whether it exists and is already resolved.
func (s Spec) Get(path string) (any, bool) {
	path = strings.TrimPrefix(path, "config.")
	var cur any = map[string]any(s)
	for _, part := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[part]
			if !ok {
				return nil, false
			}
			cur = v
		case Spec:
			v, ok := c[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	if _, unresolved := cur.(Domain); unresolved {
		return nil, false
	}
	return cur, true
}

// Float returns the number at path as a float64.
func (s Spec) Float(path string) (float64, bool) {
	v, ok := s.Get(path)
	if !ok {
		return 0, false
	}
	return toFloat(v)
}

// toFloat converts any Go or JSON number to float64; a boolean counts as
// 1 or 0.
func toFloat(v any) (float64, bool) {
	if b, ok := v.(bool); ok {
		if b {
			return 1, true
		}
		return 0, true
	}
	return numeric.Float(v)
}

// Float reads a number from a trial config whatever its Go type (configs
// read back from the journal on resume hold float64 where Go code put int).
func Float(config map[string]any, path string) (float64, bool) { return Spec(config).Float(path) }

// Int reads an integer from a trial config, rounding a float64.
func Int(config map[string]any, path string) (int, bool) {
	f, ok := Spec(config).Float(path)
	return int(math.Round(f)), ok
}

// leaf is one domain found in a config with its location.
type leaf struct {
	path   []string
	domain Domain
}

func pathString(path []string) string {
	var b strings.Builder
	for i, p := range path {
		if _, err := strconv.Atoi(p); err == nil && i > 0 {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// findDomains lists the domains in a config in a stable (sorted-key) order.
func findDomains(v any, path []string, out *[]leaf) {
	switch x := v.(type) {
	case Domain:
		*out = append(*out, leaf{path: append([]string(nil), path...), domain: x})
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			findDomains(x[k], append(path, k), out)
		}
	case []any:
		for i, e := range x {
			findDomains(e, append(path, strconv.Itoa(i)), out)
		}
	}
}

// deepCopy copies maps and lists so variants never share mutable parts.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case Spec:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// setPath stores val at path inside cfg (maps and lists already exist).
func setPath(cfg map[string]any, path []string, val any) {
	var cur any = cfg
	for i, p := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[p] = val
				return
			}
			cur = c[p]
		case []any:
			idx, _ := strconv.Atoi(p)
			if last {
				c[idx] = val
				return
			}
			cur = c[idx]
		}
	}
}

// resolve fills every non-grid domain of cfg (grids already replaced by the
// caller): random domains first in path order, then SampleFrom values, in as
// many passes as their references need.
func resolve(cfg map[string]any, rng *rand.Rand) error {
	var leaves []leaf
	findDomains(cfg, nil, &leaves)
	var deferred []leaf
	for _, l := range leaves {
		if _, ok := l.domain.(SampleFrom); ok {
			deferred = append(deferred, l)
			continue
		}
		v, err := l.domain.Sample(rng, Spec(cfg))
		if err != nil {
			return fmt.Errorf("tune: sampling %s: %w", pathString(l.path), err)
		}
		setPath(cfg, l.path, v)
	}
	for len(deferred) > 0 {
		var next []leaf
		var lastErr error
		for _, l := range deferred {
			v, err := l.domain.Sample(rng, Spec(cfg))
			if err != nil {
				lastErr = fmt.Errorf("tune: sample_from at %s: %w", pathString(l.path), err)
				next = append(next, l)
				continue
			}
			setPath(cfg, l.path, v)
		}
		if len(next) == len(deferred) {
			return lastErr
		}
		deferred = next
	}
	return nil
}

// ParseSpace turns an experiment file's config (decoded YAML or JSON) into a
// search space: every map with exactly one key among grid_search, choice,
// uniform, quniform, loguniform, randint, normal, qnormal and sample_from
// becomes the matching Domain. Malformed spaces are errors naming the key
// path and the expected form.
func ParseSpace(cfg map[string]any) (map[string]any, error) {
	out, err := parseValue(normalizeYAML(cfg), []string{"config"})
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// normalizeYAML converts map[any]any (older YAML decoders) into
// map[string]any.
func normalizeYAML(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalizeYAML(e)
		}
		return m
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalizeYAML(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = normalizeYAML(e)
		}
		return l
	}
	return v
}

var domainKeys = map[string]bool{
	"grid_search": true, "choice": true, "uniform": true, "quniform": true, "loguniform": true,
	"randint": true, "normal": true, "qnormal": true, "sample_from": true,
}

// domainNames lists the search space types, sorted.
func domainNames() []string {
	names := make([]string, 0, len(domainKeys))
	for k := range domainKeys {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func parseValue(v any, path []string) (any, error) {
	switch x := v.(type) {
	case Domain:
		return x, nil
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if domainKeys[k] {
					d, err := parseDomain(k, arg)
					if err != nil {
						return nil, fmt.Errorf("tune: search space at %s: %w", pathString(path), err)
					}
					return d, nil
				}
				// A misspelled space would otherwise be a literal value
				// that every trial fails on.
				if near := suggest.Closest(k, domainNames()); near != "" {
					return nil, fmt.Errorf("tune: search space at %s: unknown search space type %q (did you mean %q?); known types: %s",
						pathString(path), k, near, strings.Join(domainNames(), ", "))
				}
			}
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			if domainKeys[k] {
				return nil, fmt.Errorf("tune: search space at %s: %q must be the only key of its map (found %d keys); write {%s: ...} as the value of a key of its own",
					pathString(append(path, k)), k, len(x), k)
			}
			pv, err := parseValue(e, append(path, k))
			if err != nil {
				return nil, err
			}
			m[k] = pv
		}
		return m, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			pv, err := parseValue(e, append(path, strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			l[i] = pv
		}
		return l, nil
	}
	return v, nil
}

func numbers(kind string, arg any, n int, form string) ([]float64, error) {
	l, ok := arg.([]any)
	if !ok || len(l) != n {
		return nil, fmt.Errorf("%s takes a list of %d numbers %s, got %s", kind, n, form, show(arg))
	}
	out := make([]float64, n)
	for i, e := range l {
		f, ok := toFloat(e)
		if !ok {
			return nil, fmt.Errorf("%s takes a list of %d numbers %s; element %d is %s", kind, n, form, i, show(e))
		}
		out[i] = f
	}
	return out, nil
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func parseDomain(kind string, arg any) (Domain, error) {
	switch kind {
	case "grid_search", "choice":
		l, ok := arg.([]any)
		if !ok || len(l) == 0 {
			return nil, fmt.Errorf("%s takes a non-empty list of values, got %s", kind, show(arg))
		}
		if kind == "choice" {
			return Choice{Values: l}, nil
		}
		return GridSearch{Values: l}, nil
	case "uniform", "loguniform":
		n, err := numbers(kind, arg, 2, "[low, high]")
		if err != nil {
			return nil, err
		}
		if !(n[0] < n[1]) {
			return nil, fmt.Errorf("%s needs low < high, got [%g, %g]", kind, n[0], n[1])
		}
		if kind == "loguniform" {
			if n[0] <= 0 {
				return nil, fmt.Errorf("loguniform needs 0 < low, got low %g", n[0])
			}
			return LogUniform{n[0], n[1]}, nil
		}
		return Uniform{n[0], n[1]}, nil
	case "quniform":
		n, err := numbers(kind, arg, 3, "[low, high, q]")
		if err != nil {
			return nil, err
		}
		if !(n[0] < n[1]) || n[2] <= 0 {
			return nil, fmt.Errorf("quniform needs low < high and q > 0, got %s", show(arg))
		}
		return QUniform{n[0], n[1], n[2]}, nil
	case "randint":
		n, err := numbers(kind, arg, 2, "[low, high) of integers")
		if err != nil {
			return nil, err
		}
		if n[0] != math.Trunc(n[0]) || n[1] != math.Trunc(n[1]) || !(n[0] < n[1]) {
			return nil, fmt.Errorf("randint needs integers low < high (high excluded), got %s", show(arg))
		}
		return RandInt{int(n[0]), int(n[1])}, nil
	case "normal":
		n, err := numbers(kind, arg, 2, "[mean, sd]")
		if err != nil {
			return nil, err
		}
		if n[1] <= 0 {
			return nil, fmt.Errorf("normal needs sd > 0, got %g", n[1])
		}
		return Normal{n[0], n[1]}, nil
	case "qnormal":
		n, err := numbers(kind, arg, 3, "[mean, sd, q]")
		if err != nil {
			return nil, err
		}
		if n[1] <= 0 || n[2] <= 0 {
			return nil, fmt.Errorf("qnormal needs sd > 0 and q > 0, got %s", show(arg))
		}
		return QNormal{n[0], n[1], n[2]}, nil
	case "sample_from":
		s, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf(`sample_from takes an expression string such as "config.lr * 2", got %s`, show(arg))
		}
		e, err := ParseExpr(s)
		if err != nil {
			return nil, err
		}
		return SampleFrom{Expr: s, expr: e}, nil
	}
	return nil, fmt.Errorf("unknown search space %q", kind)
}

// SpaceFingerprint is the canonical JSON of a search space; resume compares
// it with the one recorded when the experiment started.
func SpaceFingerprint(space map[string]any) (string, error) {
	b, err := json.Marshal(space)
	if err != nil {
		return "", fmt.Errorf("tune: search space cannot be written as JSON: %w", err)
	}
	return string(b), nil
}
