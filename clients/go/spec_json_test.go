package rlock

// The JSON side of the spec runner (spec_test.go): scenario files read with integers as
// int64, admin replies as the spec's JSON, and the README's "comparing".

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// readJSONFile decodes a file with every integral number as an int64.
func readJSONFile(path string) (interface{}, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v interface{}
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return integers(v), nil
}

func integers(v interface{}) interface{} {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case []interface{}:
		for i := range x {
			x[i] = integers(x[i])
		}
	case map[string]interface{}:
		for k := range x {
			x[k] = integers(x[k])
		}
	}
	return v
}

func jsonText(v interface{}) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Fields of a step (check.py has checked their types).
func str(step map[string]interface{}, name string) string {
	s, _ := step[name].(string)
	return s
}

func num(step map[string]interface{}, name string) int64 { return numOr(step, name, 0) }

func numOr(step map[string]interface{}, name string, otherwise int64) int64 {
	if n, ok := step[name].(int64); ok {
		return n
	}
	return otherwise
}

func stringList(v interface{}) []string {
	list, _ := v.([]interface{})
	out := make([]string, len(list))
	for i, s := range list {
		out[i], _ = s.(string)
	}
	return out
}

// specValue is an admin reply (as go-redis decodes RESP3) as the spec's JSON: maps are
// objects, nil is null, integers are int64, booleans the integers 1 and 0, strings strings.
func specValue(v interface{}) interface{} {
	switch x := v.(type) {
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = specValue(e)
		}
		return out
	case map[interface{}]interface{}:
		out := map[string]interface{}{}
		for k, e := range x {
			out[fmt.Sprint(k)] = specValue(e)
		}
		return out
	}
	return v
}

// infoFields is INFO's text as an object of its field:value lines, integers as numbers.
func infoFields(text string) map[string]interface{} {
	out := map[string]interface{}{}
	for _, line := range strings.Split(text, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[name] = n
		} else {
			out[name] = v
		}
	}
	return out
}

// value is a literal, or the saved value a "$name" names.
func (r *specRun) value(v interface{}) interface{} {
	if s, ok := v.(string); ok && strings.HasPrefix(s, "$") {
		if saved, ok := r.saved[s[1:]]; ok {
			return saved
		}
		return unknownName(s)
	}
	return v
}

// unknownName is a "$name" that was never saved: it matches nothing.
type unknownName string

// matches is the README's "comparing".
func (r *specRun) matches(expected, actual interface{}) bool {
	switch e := expected.(type) {
	case map[string]interface{}:
		if operators(e) {
			for op, operand := range e {
				if !r.operator(op, operand, actual) {
					return false
				}
			}
			return true
		}
		a, ok := actual.(map[string]interface{})
		if !ok {
			return false
		}
		for k, want := range e {
			got, present := a[k]
			if !present || !r.matches(want, got) {
				return false
			}
		}
		return true
	case []interface{}:
		a, ok := actual.([]interface{})
		if !ok || len(a) != len(e) {
			return false
		}
		for i := range e {
			if !r.matches(e[i], a[i]) {
				return false
			}
		}
		return true
	}
	want := r.value(expected)
	switch want.(type) {
	case nil, int64, string, bool:
		return want == actual
	}
	return false
}

func operators(e map[string]interface{}) bool {
	for k := range e {
		if !strings.HasPrefix(k, "$") {
			return false
		}
	}
	return len(e) > 0
}

func (r *specRun) operator(op string, operand, actual interface{}) bool {
	switch op {
	case "$type":
		switch actual.(type) {
		case int64:
			return operand == "integer"
		case string:
			return operand == "string"
		case []interface{}:
			return operand == "array"
		case map[string]interface{}:
			return operand == "object"
		case bool:
			return operand == "boolean"
		case nil:
			return operand == "null"
		}
		return false
	case "$len":
		a, ok := actual.([]interface{})
		return ok && int64(len(a)) == operand
	}
	a, ok := actual.(int64)
	b, ok2 := r.value(operand).(int64)
	if !ok || !ok2 {
		return false
	}
	switch op {
	case "$gt":
		return a > b
	case "$gte":
		return a >= b
	case "$lt":
		return a < b
	case "$lte":
		return a <= b
	case "$ne":
		return a != b
	}
	return false // an unknown operator (check.py refuses it first)
}
