package containerconfig

import "strings"

// Expand replaces each $(VAR) in input by mapping(VAR), as upstream's
// third_party/forked/golang/expansion: $$ is a literal $, a reference that
// does not close or names no variable is left as written.
func Expand(input string, mapping func(string) string) string {
	var buf strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariable(input[cursor+1:])
		if isVar {
			buf.WriteString(mapping(read))
		} else {
			buf.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return buf.String() + input[checkpoint:]
}

func readVariable(input string) (read string, isVar bool, advance int) {
	switch input[0] {
	case '$':
		return "$", false, 1
	case '(':
		for i := 1; i < len(input); i++ {
			if input[i] == ')' {
				return input[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	}
	return "$" + input[0:1], false, 1
}

// mappingFor looks a name up in vars, leaving an unknown one as $(name).
func mappingFor(vars map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return "$(" + name + ")"
	}
}
