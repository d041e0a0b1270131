package dashboard

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/gray-ml/gray/platform/runlog"
)

// parseResult decodes one result.json line into its numeric values under
// flattened keys (nested objects joined by runlog.Sep), and whether it
// says done. A line that is not one whole JSON object gives ok=false.
//
// It scans the bytes itself instead of decoding into map[string]any: a
// chart of a thousand runs reads a hundred thousand lines, and only the
// numbers are kept.
func parseResult(line []byte) (flat map[string]float64, done, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, false, false
	}
	s := resultScanner{b: line, out: make(map[string]float64, 32)}
	if !s.whole() {
		return nil, false, false
	}
	return s.out, s.done, true
}

// parseResultAll is parseResult that also keeps the string and boolean
// values (as text), for the CSV download.
func parseResultAll(line []byte) (nums map[string]float64, strs map[string]string, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, nil, false
	}
	s := resultScanner{b: line, out: make(map[string]float64, 32), strs: map[string]string{}}
	if !s.whole() {
		return nil, nil, false
	}
	return s.out, s.strs, true
}

// nonFiniteResult reports whether a line that is not JSON is a result
// only for Python's NaN or Infinity words in it (rare: it decodes).
func nonFiniteResult(line []byte) bool {
	if !bytes.Contains(line, []byte("NaN")) && !bytes.Contains(line, []byte("Infinity")) {
		return false
	}
	_, _, ok := parseResult(line)
	return ok
}

// whole reads one object that must fill the line.
func (s *resultScanner) whole() bool {
	if !s.object("", 0) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

// maxDepth bounds the nesting of objects and arrays a result may have.
const maxDepth = 64

type resultScanner struct {
	b    []byte
	i    int
	out  map[string]float64
	strs map[string]string // nil: strings are not kept
	done bool
}

// text records a string or boolean value under key when strings are kept.
func (s *resultScanner) text(key, v string) {
	if key != "" && s.strs != nil {
		s.strs[key] = v
	}
}

func (s *resultScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object reads an object whose keys are prefixed by prefix.
func (s *resultScanner) object(prefix string, depth int) bool {
	if depth > maxDepth || s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.space()
		key, ok := s.str()
		if !ok {
			return false
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		if !s.value(prefix+key, depth+1) {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// value reads any value; numbers are recorded under key, and a nested
// object's keys under key/. key == "" means: record nothing (inside an
// array).
func (s *resultScanner) value(key string, depth int) bool {
	if s.i >= len(s.b) || depth > maxDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		if key == "" {
			return s.object("", depth) // inside an array: keys are not kept
		}
		return s.object(key+runlog.Sep, depth)
	case c == '[':
		s.i++
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		for {
			s.space()
			if !s.skip(depth + 1) {
				return false
			}
			s.space()
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == ']' {
				s.i++
				return true
			}
			if s.b[s.i] != ',' {
				return false
			}
			s.i++
		}
	case c == '"':
		v, ok := s.str()
		s.text(key, v)
		return ok
	case c == 't':
		if key == "done" {
			s.done = true
		}
		s.text(key, "true")
		return s.literal("true")
	case c == 'f':
		if key == "done" {
			s.done = false
		}
		s.text(key, "false")
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == 'N' || c == 'I' || (c == '-' && s.i+1 < len(s.b) && s.b[s.i+1] == 'I'):
		// Python's json (Ray Tune's result.json among its writers) writes
		// non-finite floats as these words. The line's other values are
		// kept; the word itself charts as a gap, as null does.
		for _, w := range [...]string{"NaN", "Infinity", "-Infinity"} {
			if s.literal(w) {
				s.text(key, w)
				return true
			}
		}
		return false
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		for s.i < len(s.b) {
			c := s.b[s.i]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				s.i++
				continue
			}
			break
		}
		v, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
		if err != nil {
			return false
		}
		if key != "" {
			s.out[key] = v
		}
		return true
	}
	return false
}

// skip reads a value inside an array, keeping nothing from it.
func (s *resultScanner) skip(depth int) bool {
	if s.i < len(s.b) && s.b[s.i] == '{' {
		saved, strs := s.out, s.strs
		s.out, s.strs = map[string]float64{}, nil
		ok := s.object("", depth)
		s.out, s.strs = saved, strs
		return ok
	}
	return s.value("", depth)
}

func (s *resultScanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// str reads a string and returns its value.
func (s *resultScanner) str() (string, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i
	s.i++
	escaped := false
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '\\':
			escaped = true
			s.i += 2
		case c == '"':
			s.i++
			raw := s.b[start:s.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), true
			}
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return "", false
			}
			return v, true
		case c < 0x20:
			return "", false
		default:
			s.i++
		}
	}
	return "", false
}
