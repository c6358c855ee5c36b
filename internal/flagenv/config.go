package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

var (
	// ErrUnknownKey is a config file's key that is no flag's name.
	ErrUnknownKey = errors.New("unknown key")
	// ErrWrongType is a config file's value of a type its flag does not take.
	ErrWrongType = errors.New("wrong type")
)

// ConfigError is a config file the flags refuse.
type ConfigError struct {
	File string
	Line int    // from 1; 0 when not known
	Key  string // "" when the file is not TOML
	Err  error
}

func (e *ConfigError) Error() string {
	s := "config file " + e.File
	if e.Line > 0 {
		s += ", line " + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		s += ", key " + strconv.Quote(e.Key)
	}
	return s + ": " + e.Err.Error()
}

func (e *ConfigError) Unwrap() error { return e.Err }

// valueCheck takes a key's value from the TOML decoder, which reports the
// key's line with any error it returns.
type valueCheck func(v any) error

func (c valueCheck) UnmarshalTOML(v any) error { return c(v) }

// applyFile sets, from the TOML file at path, the flags not in set.
func applyFile(fs *flag.FlagSet, path string, set map[string]bool, o Options) error {
	read := o.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	data, err := read(path)
	if err != nil {
		return &ConfigError{File: path, Err: err}
	}
	var keys map[string]toml.Primitive
	md, err := toml.Decode(string(data), &keys)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return &ConfigError{File: path, Line: pe.Position.Line, Err: errors.New(pe.Message)}
		}
		return &ConfigError{File: path, Err: err}
	}
	done := map[string]bool{}
	for _, k := range md.Keys() { // in the file's order, so the first mistake is reported
		name := k[0] // a table's keys are reported as the table
		if done[name] {
			continue
		}
		done[name] = true
		var cause error
		check := valueCheck(func(v any) error {
			cause = setFromFile(fs, name, v, set, o)
			return cause
		})
		if err := md.PrimitiveDecode(keys[name], &check); err != nil {
			line := 0
			var pe toml.ParseError
			if errors.As(err, &pe) {
				line = pe.Position.Line
			}
			if line == 0 { // a dotted key (a.b = 1) has no position of its own
				line = lineOf(string(data), name)
			}
			if cause == nil {
				cause = err
			}
			return &ConfigError{File: path, Line: line, Key: name, Err: cause}
		}
	}
	return nil
}

// setFromFile checks a key's value and sets its flag unless the command
// line or the environment set it.
func setFromFile(fs *flag.FlagSet, name string, v any, set map[string]bool, o Options) error {
	f := fs.Lookup(name)
	switch {
	case f != nil && (name == o.Config || slices.Contains(o.CommandLineOnly, name)):
		return fmt.Errorf("%w: --%s is read from the command line only", ErrUnknownKey, name)
	case f == nil:
		if alt := strings.ToLower(strings.ReplaceAll(name, "_", "-")); fs.Lookup(alt) != nil {
			return fmt.Errorf("%w (keys are spelt as the flags: %s)", ErrUnknownKey, alt)
		}
		return fmt.Errorf("%w: no flag --%s", ErrUnknownKey, name)
	}
	s, ok := text(f, v)
	if !ok {
		return fmt.Errorf("%w: --%s takes %s, the file gives %s", ErrWrongType, name, takes(f), tomlType(v))
	}
	if set[name] {
		return nil
	}
	if err := f.Value.Set(s); err != nil {
		return fmt.Errorf("invalid value %q: %w", s, err)
	}
	return nil
}

// text is v as the flag's command-line text, if the flag takes v's type.
func text(f *flag.Flag, v any) (string, bool) {
	var want any = "" // a flag.Value of its own takes a string
	if g, ok := f.Value.(flag.Getter); ok {
		want = g.Get()
	}
	switch x := v.(type) {
	case bool:
		if _, ok := want.(bool); ok {
			return strconv.FormatBool(x), true
		}
	case int64:
		switch want.(type) {
		case int, int64, uint, uint64, float64:
			return strconv.FormatInt(x, 10), true
		}
	case float64:
		if _, ok := want.(float64); ok {
			return strconv.FormatFloat(x, 'g', -1, 64), true
		}
	case string:
		switch want.(type) {
		case string, time.Duration:
			return x, true
		case bool, int, int64, uint, uint64, float64:
		default:
			return x, true
		}
	}
	return "", false
}

// takes says what a flag's value is in TOML.
func takes(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a string"
	}
	switch g.Get().(type) {
	case bool:
		return "true or false"
	case int, int64, uint, uint64:
		return "an integer"
	case float64:
		return "a number"
	case time.Duration:
		return `a duration in quotes, like "30s"`
	}
	return "a string"
}

func tomlType(v any) string {
	switch v.(type) {
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

// lineOf is the first line, from 1, that starts with the key name, bare
// or quoted, or as a table's header; 0 if none does.
func lineOf(data, name string) int {
	for i, l := range strings.Split(data, "\n") {
		l = strings.TrimLeft(strings.TrimSpace(l), "[")
		for _, q := range []string{"", `"`, "'"} {
			if rest, ok := strings.CutPrefix(l, q+name+q); ok && (rest == "" || strings.ContainsAny(rest[:1], " \t=.]")) {
				return i + 1
			}
		}
	}
	return 0
}
