package tune

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// exprNode is a parsed sample_from expression.
type exprNode struct {
	op          byte // 'n' number, 'r' reference, 'f' function call, or + - * /
	num         float64
	ref         string
	fn          string
	left, right *exprNode
	args        []*exprNode
}

// ParseExpr parses a sample_from expression: numbers, references to other
// config values ("config.lr", "config.model.hidden"), + - * /, parentheses
// and the functions int(x), round(x), min(a, b), max(a, b), pow(a, b),
// log(x), exp(x) and sqrt(x). A result that is a whole number produced by
// int or round is an int; everything else is a float64.
func ParseExpr(s string) (*exprNode, error) {
	p := &exprParser{src: s}
	p.next()
	n, err := p.sum()
	if err != nil {
		return nil, fmt.Errorf("sample_from %q: %w", s, err)
	}
	if p.tok != "" {
		return nil, fmt.Errorf("sample_from %q: unexpected %q at offset %d", s, p.tok, p.pos-len(p.tok))
	}
	return n, nil
}

type exprParser struct {
	src string
	pos int
	tok string
}

func (p *exprParser) next() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
	if p.pos >= len(p.src) {
		p.tok = ""
		return
	}
	start := p.pos
	c := rune(p.src[p.pos])
	switch {
	case unicode.IsDigit(c) || c == '.':
		for p.pos < len(p.src) && (unicode.IsDigit(rune(p.src[p.pos])) || strings.ContainsRune(".eE", rune(p.src[p.pos])) ||
			((p.src[p.pos] == '-' || p.src[p.pos] == '+') && p.pos > start && (p.src[p.pos-1] == 'e' || p.src[p.pos-1] == 'E'))) {
			p.pos++
		}
	case unicode.IsLetter(c) || c == '_':
		for p.pos < len(p.src) && (unicode.IsLetter(rune(p.src[p.pos])) || unicode.IsDigit(rune(p.src[p.pos])) || strings.ContainsRune("_.", rune(p.src[p.pos]))) {
			p.pos++
		}
	default:
		p.pos++
	}
	p.tok = p.src[start:p.pos]
}

func (p *exprParser) sum() (*exprNode, error) {
	l, err := p.product()
	if err != nil {
		return nil, err
	}
	for p.tok == "+" || p.tok == "-" {
		op := p.tok[0]
		p.next()
		r, err := p.product()
		if err != nil {
			return nil, err
		}
		l = &exprNode{op: op, left: l, right: r}
	}
	return l, nil
}

func (p *exprParser) product() (*exprNode, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.tok == "*" || p.tok == "/" {
		op := p.tok[0]
		p.next()
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = &exprNode{op: op, left: l, right: r}
	}
	return l, nil
}

func (p *exprParser) unary() (*exprNode, error) {
	if p.tok == "-" {
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &exprNode{op: '-', left: &exprNode{op: 'n'}, right: x}, nil
	}
	return p.atom()
}

var exprFuncs = map[string]int{"int": 1, "round": 1, "min": 2, "max": 2, "pow": 2, "log": 1, "exp": 1, "sqrt": 1}

func (p *exprParser) atom() (*exprNode, error) {
	tok := p.tok
	switch {
	case tok == "":
		return nil, fmt.Errorf("expression ends too early")
	case tok == "(":
		p.next()
		n, err := p.sum()
		if err != nil {
			return nil, err
		}
		if p.tok != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.next()
		return n, nil
	case unicode.IsDigit(rune(tok[0])) || tok[0] == '.':
		f, err := strconv.ParseFloat(tok, 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", tok)
		}
		p.next()
		return &exprNode{op: 'n', num: f}, nil
	case strings.HasPrefix(tok, "config."):
		p.next()
		return &exprNode{op: 'r', ref: strings.TrimPrefix(tok, "config.")}, nil
	}
	if arity, ok := exprFuncs[tok]; ok {
		p.next()
		if p.tok != "(" {
			return nil, fmt.Errorf("%s needs (", tok)
		}
		p.next()
		n := &exprNode{op: 'f', fn: tok}
		for i := 0; i < arity; i++ {
			if i > 0 {
				if p.tok != "," {
					return nil, fmt.Errorf("%s takes %d arguments", tok, arity)
				}
				p.next()
			}
			a, err := p.sum()
			if err != nil {
				return nil, err
			}
			n.args = append(n.args, a)
		}
		if p.tok != ")" {
			return nil, fmt.Errorf("%s takes %d arguments; missing )", tok, arity)
		}
		p.next()
		return n, nil
	}
	return nil, fmt.Errorf("unknown name %q: refer to other values as config.<key>, functions are int, round, min, max, pow, log, exp, sqrt", tok)
}

func (n *exprNode) eval(spec Spec) (any, error) {
	f, isInt, err := n.evalF(spec)
	if err != nil {
		return nil, err
	}
	if isInt {
		return int(f), nil
	}
	return f, nil
}

func (n *exprNode) evalF(spec Spec) (float64, bool, error) {
	switch n.op {
	case 'n':
		return n.num, false, nil
	case 'r':
		v, ok := spec.Get(n.ref)
		if !ok {
			return 0, false, fmt.Errorf("config.%s is not (yet) a resolved value", n.ref)
		}
		f, ok := toFloat(v)
		if !ok {
			return 0, false, fmt.Errorf("config.%s is %s, not a number", n.ref, show(v))
		}
		_, isInt := v.(int)
		return f, isInt, nil
	case 'f':
		var a [2]float64
		for i, arg := range n.args {
			f, _, err := arg.evalF(spec)
			if err != nil {
				return 0, false, err
			}
			a[i] = f
		}
		switch n.fn {
		case "int":
			return math.Trunc(a[0]), true, nil
		case "round":
			return math.Round(a[0]), true, nil
		case "min":
			return math.Min(a[0], a[1]), false, nil
		case "max":
			return math.Max(a[0], a[1]), false, nil
		case "pow":
			return math.Pow(a[0], a[1]), false, nil
		case "log":
			return math.Log(a[0]), false, nil
		case "exp":
			return math.Exp(a[0]), false, nil
		case "sqrt":
			return math.Sqrt(a[0]), false, nil
		}
	}
	l, li, err := n.left.evalF(spec)
	if err != nil {
		return 0, false, err
	}
	r, ri, err := n.right.evalF(spec)
	if err != nil {
		return 0, false, err
	}
	switch n.op {
	case '+':
		return l + r, li && ri, nil
	case '-':
		return l - r, (li || n.left.op == 'n' && n.left.num == 0) && ri, nil
	case '*':
		return l * r, li && ri, nil
	case '/':
		if r == 0 {
			return 0, false, fmt.Errorf("division by zero")
		}
		return l / r, false, nil
	}
	return 0, false, fmt.Errorf("bad expression")
}
