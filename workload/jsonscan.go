package workload

import (
	"encoding/json"
	"fmt"
)

// jsonScan walks JSON text in place without decoding it: it finds object
// members, reads the strings asked for and skips every other value. Skipped
// values are only scanned for their end (strings and bracket depth), not
// validated, as a full decoder would.
type jsonScan struct {
	b []byte
	i int // next byte to read
}

// errorf is a malformed-event error at the current position.
func (s *jsonScan) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: JSON at byte %d: %s", errMalformed, s.i, fmt.Sprintf(format, args...))
}

// unexpected says what was found where want was expected.
func (s *jsonScan) unexpected(want string) error {
	if s.i >= len(s.b) {
		return s.errorf("want %s, the event ends", want)
	}
	return s.errorf("want %s, have %q", want, s.b[s.i])
}

func (s *jsonScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// eat consumes c if it is next (after white space).
func (s *jsonScan) eat(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str consumes a string and returns it as written, quotes included, and
// whether it holds escapes.
func (s *jsonScan) str() (quoted []byte, escaped bool, err error) {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, s.unexpected("a string")
	}
	start := s.i
	for j := start + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			escaped = true
			j++ // the escaped byte, which may be a quote
		case '"':
			s.i = j + 1
			return s.b[start:s.i], escaped, nil
		}
	}
	s.i = len(s.b)
	return nil, false, s.errorf("unterminated string")
}

// stringValue consumes a string and returns its value.
func (s *jsonScan) stringValue() (string, error) {
	q, escaped, err := s.str()
	if err != nil {
		return "", err
	}
	return unquote(q, escaped)
}

// unquote is the value of the JSON string q (quotes included). Escapes are
// rare, so they take encoding/json, which knows all of JSON's (\u with
// surrogate pairs, \/), unlike strconv.Unquote.
func unquote(q []byte, escaped bool) (string, error) {
	if !escaped {
		return string(q[1 : len(q)-1]), nil
	}
	var v string
	if err := json.Unmarshal(q, &v); err != nil {
		return "", fmt.Errorf("%w: JSON string %s: %w", errMalformed, q, err)
	}
	return v, nil
}

// keyIs reports whether the member name q (as str returned it) is want.
func keyIs(q []byte, escaped bool, want string) bool {
	if !escaped {
		return string(q[1:len(q)-1]) == want // compared without a copy
	}
	k, err := unquote(q, true)
	return err == nil && k == want
}

// skip consumes one value of any kind.
func (s *jsonScan) skip() error {
	s.space()
	if s.i >= len(s.b) {
		return s.unexpected("a value")
	}
	switch s.b[s.i] {
	case '"':
		_, _, err := s.str()
		return err
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, _, err := s.str(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					s.i++
					return nil
				}
			}
			s.i++
		}
		return s.errorf("unterminated object or array")
	case '}', ']', ',', ':':
		return s.unexpected("a value")
	}
	// A number, true, false or null: up to the next delimiter.
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if s.i == start {
				return s.unexpected("a value")
			}
			return nil
		}
		s.i++
	}
	return nil
}

// object consumes an object member by member: member gets each name (as
// str returned it) and must consume the value. If member says stop, the
// walk ends there and the rest of the object stays unread.
func (s *jsonScan) object(member func(key []byte, escaped bool) (stop bool, err error)) error {
	if !s.eat('{') {
		return s.unexpected("an object")
	}
	if s.eat('}') {
		return nil
	}
	for {
		key, escaped, err := s.str()
		if err != nil {
			return err
		}
		if !s.eat(':') {
			return s.unexpected("':'")
		}
		if stop, err := member(key, escaped); err != nil || stop {
			return err
		}
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return nil
		}
		return s.unexpected("',' or '}'")
	}
}

// null consumes null if it is next.
func (s *jsonScan) null() bool {
	s.space()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// array consumes an array element by element: element must consume each.
func (s *jsonScan) array(element func() error) error {
	if !s.eat('[') {
		return s.unexpected("an array")
	}
	if s.eat(']') {
		return nil
	}
	for {
		if err := element(); err != nil {
			return err
		}
		if s.eat(',') {
			continue
		}
		if s.eat(']') {
			return nil
		}
		return s.unexpected("',' or ']'")
	}
}
