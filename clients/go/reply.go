package rlock

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// valueKind tells apart what rlock's replies use, as go-redis decoded them.
type valueKind int

const (
	valNil valueKind = iota
	valString
	valInt
	valList // arrays and sets; a map as key, value, key, value ...
)

// value is one reply, converted from what go-redis returns (string, int64, nil, slices and
// RESP3 maps), so that the lock code reads RESP2 and RESP3 replies alike.
type value struct {
	kind  valueKind
	str   string
	num   int64
	elems []value
}

func valueOf(v interface{}) value {
	switch x := v.(type) {
	case nil:
		return value{kind: valNil}
	case string:
		return value{kind: valString, str: x}
	case int64:
		return value{kind: valInt, num: x}
	case bool:
		if x {
			return value{kind: valInt, num: 1}
		}
		return value{kind: valInt}
	case float64:
		return value{kind: valString, str: strconv.FormatFloat(x, 'f', -1, 64)}
	case []interface{}:
		out := value{kind: valList, elems: make([]value, len(x))}
		for i, e := range x {
			out.elems[i] = valueOf(e)
		}
		return out
	case map[interface{}]interface{}:
		// A RESP3 map: flattened in a stable order (by key) as RESP2 sends it.
		keys := make([]string, 0, len(x))
		byName := make(map[string]interface{}, len(x))
		for k, e := range x {
			name := fmt.Sprint(k)
			keys = append(keys, name)
			byName[name] = e
		}
		sort.Strings(keys)
		out := value{kind: valList}
		for _, k := range keys {
			out.elems = append(out.elems, value{kind: valString, str: k}, valueOf(byName[k]))
		}
		return out
	}
	return value{kind: valString, str: fmt.Sprint(v)}
}

// field returns a map (or RESP2 flat field/value array) entry by name.
func (v value) field(name string) (value, bool) {
	if v.kind != valList {
		return value{}, false
	}
	for i := 0; i+1 < len(v.elems); i += 2 {
		if v.elems[i].str == name {
			return v.elems[i+1], true
		}
	}
	return value{}, false
}

func (v value) isNil() bool { return v.kind == valNil }

// integer reads an integer reply, also given as a string (RESP2 doubles, map values).
func (v value) integer() (int64, bool) {
	switch v.kind {
	case valInt:
		return v.num, true
	case valString:
		n, err := strconv.ParseInt(v.str, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func (v value) native() interface{} {
	switch v.kind {
	case valString:
		return v.str
	case valInt:
		return v.num
	case valList:
		out := make([]interface{}, len(v.elems))
		for i, e := range v.elems {
			out[i] = e.native()
		}
		return out
	}
	return nil
}

// serverError is an error reply of the server (go-redis's redis.Error): its first word is the
// code (ERR, WRONGTYPE, DEADLOCK ...).
type serverError struct{ msg string }

func (e *serverError) Error() string { return e.msg }

func (e *serverError) code() string {
	for i, c := range e.msg {
		if c == ' ' {
			return e.msg[:i]
		}
	}
	return e.msg
}

// commandResult splits one go-redis command's outcome into its reply, a server error
// (which stays with its command), or a failure of the connection (ErrConnection).
func commandResult(cmd *redis.Cmd) result {
	err := cmd.Err()
	switch {
	case err == nil:
		return result{reply: valueOf(cmd.Val())}
	case errors.Is(err, redis.Nil):
		return result{reply: value{kind: valNil}}
	}
	var re redis.Error
	if errors.As(err, &re) {
		return result{err: &serverError{msg: re.Error()}}
	}
	return result{err: fmt.Errorf("%w: %v", ErrConnection, err)}
}

// result is one reply of a pipeline: a server error stays with its command.
type result struct {
	reply value
	err   error
}
