// Package jsonrpc reads JSON-RPC messages: newline-delimited lines with a size limit, a
// message's envelope decoded once (Parse), and the id of a message too large to decode.
package jsonrpc

import (
	"bytes"
	"regexp"
)

const value = `(-?[0-9][0-9.eE+-]*|"(?:[^"\\]|\\.)*"|null)`

var (
	// headID is an id written first, or after jsonrpc and method, as most SDKs write it.
	headID = regexp.MustCompile(`^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,)*\s*"id"\s*:\s*` + value)
	// tailID is an id written last, as the TypeScript SDK writes it: only the object's own
	// id can stand right before its closing brace.
	tailID = regexp.MustCompile(`[,{]\s*"id"\s*:\s*` + value + `\s*\}\s*$`)
)

// IDOfEnds returns the top-level id of a message too large to read whole, of which only the
// start (head) and the end (tail) were kept, if it is written first or last; or nil. It is
// for answering that message with an error under its id.
func IDOfEnds(head, tail []byte) []byte {
	if m := headID.FindSubmatch(head); m != nil {
		return m[1]
	}
	if m := tailID.FindSubmatch(tail); m != nil && isObject(head) {
		return m[1]
	}
	return nil
}

// isObject reports whether msg starts as a JSON object.
func isObject(msg []byte) bool {
	msg = bytes.TrimSpace(msg)
	return len(msg) > 0 && msg[0] == '{'
}
