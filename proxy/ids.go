package proxy

import (
	"bytes"
	"regexp"
)

// mcp-go decodes a request's id into an interface, so a numeric id becomes a float64 and
// comes back rounded: 123456789012345678901234567890 as 1.2345678901234568e+29, which the
// client cannot match to its request. An id too long to survive that is carried through
// mcp-go as a string, and turned back into the client's number in the answer.

// bigIDPrefix marks an id toolsift turned from a number into a string.
const bigIDPrefix = "toolsift-id:"

// topID finds a message's top-level "id" member with an integer value of 16 digits or more
// (a float64 holds integers exactly to 2^53, 16 digits). It assumes the id comes before any
// member whose value holds an "id" of its own, as every client writes it: jsonrpc, id, method.
var topID = regexp.MustCompile(`^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,)*\s*"id"\s*:\s*(-?[0-9]{16,})\s*[,}]`)

// wrapBigID returns msg with a top-level id too big for a float64 written as a string.
func wrapBigID(msg []byte) []byte {
	m := topID.FindSubmatchIndex(msg)
	if m == nil {
		return msg
	}
	start, end := m[2], m[3]
	out := make([]byte, 0, len(msg)+len(bigIDPrefix)+2)
	out = append(out, msg[:start]...)
	out = append(out, '"')
	out = append(out, bigIDPrefix...)
	out = append(out, msg[start:end]...)
	out = append(out, '"')
	return append(out, msg[end:]...)
}

// wrappedID finds an id wrapBigID made, as mcp-go writes it back.
var wrappedID = regexp.MustCompile(`"id":"` + bigIDPrefix + `(-?[0-9]+)"`)

// unwrapBigID turns an id wrapBigID made back into the client's number.
func unwrapBigID(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(bigIDPrefix)) {
		return msg
	}
	return wrappedID.ReplaceAll(msg, []byte(`"id":$1`))
}
