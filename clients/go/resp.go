package rlock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// value is one decoded RESP2 or RESP3 reply. Only what rlock's replies use is kept apart:
// strings (bulk, simple, verbatim), integers, nil, arrays (and sets), maps and push messages.
type value struct {
	kind  byte // '$' string, ':' integer, '_' nil, '*' array, '%' map, '>' push, '-' error
	str   string
	num   int64
	elems []value // arrays, sets, pushes; a map as key, value, key, value ...
}

// serverError is an error reply: its first word is the code (ERR, WRONGTYPE, DEADLOCK ...).
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

var errProtocol = errors.New("rlock: protocol error in a server reply")

// field returns a map (or RESP2 flat field/value array) entry by name.
func (v value) field(name string) (value, bool) {
	if v.kind != '%' && v.kind != '*' {
		return value{kind: '_'}, false
	}
	for i := 0; i+1 < len(v.elems); i += 2 {
		if v.elems[i].str == name {
			return v.elems[i+1], true
		}
	}
	return value{kind: '_'}, false
}

func (v value) isNil() bool { return v.kind == '_' }

// integer reads an integer reply, also given as a string (RESP2 doubles, map values).
func (v value) integer() (int64, bool) {
	switch v.kind {
	case ':':
		return v.num, true
	case '$':
		n, err := strconv.ParseInt(v.str, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func writeCommand(w *bufio.Writer, args []string) {
	w.WriteString("*")
	w.WriteString(strconv.Itoa(len(args)))
	w.WriteString("\r\n")
	for _, a := range args {
		w.WriteString("$")
		w.WriteString(strconv.Itoa(len(a)))
		w.WriteString("\r\n")
		w.WriteString(a)
		w.WriteString("\r\n")
	}
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", errProtocol
	}
	return line[:len(line)-2], nil
}

// readValue decodes one reply. Error replies come back as a value of kind '-'.
func readValue(r *bufio.Reader) (value, error) {
	line, err := readLine(r)
	if err != nil {
		return value{}, err
	}
	if line == "" {
		return value{}, errProtocol
	}
	head, rest := line[0], line[1:]
	switch head {
	case '+':
		return value{kind: '$', str: rest}, nil
	case '-', '!':
		if head == '!' {
			s, err := readBulk(r, rest)
			return value{kind: '-', str: s}, err
		}
		return value{kind: '-', str: rest}, nil
	case ':':
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return value{}, errProtocol
		}
		return value{kind: ':', num: n}, nil
	case ',', '(':
		return value{kind: '$', str: rest}, nil
	case '#':
		if rest == "t" {
			return value{kind: ':', num: 1}, nil
		}
		return value{kind: ':', num: 0}, nil
	case '_':
		return value{kind: '_'}, nil
	case '$', '=':
		if rest == "-1" {
			return value{kind: '_'}, nil
		}
		s, err := readBulk(r, rest)
		if head == '=' && len(s) >= 4 {
			s = s[4:] // verbatim strings start with a "txt:" format
		}
		return value{kind: '$', str: s}, err
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(rest)
		if err != nil {
			return value{}, errProtocol
		}
		if n < 0 {
			return value{kind: '_'}, nil
		}
		count, kind := n, byte('*')
		switch head {
		case '%', '|':
			count, kind = 2*n, '%'
		case '>':
			kind = '>'
		}
		elems := make([]value, count)
		for i := range elems {
			if elems[i], err = readValue(r); err != nil {
				return value{}, err
			}
		}
		if head == '|' { // an attribute precedes the reply it describes: skip it
			return readValue(r)
		}
		return value{kind: kind, elems: elems}, nil
	}
	return value{}, fmt.Errorf("%w: type byte %q", errProtocol, head)
}

func readBulk(r *bufio.Reader, length string) (string, error) {
	n, err := strconv.Atoi(length)
	if err != nil || n < 0 {
		return "", errProtocol
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
