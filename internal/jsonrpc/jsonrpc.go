// Package jsonrpc finds what toolsift needs of a JSON-RPC message without decoding it: the
// message may be too large, or nest too deeply, to decode.
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

// IDSpan returns where a message's top-level id value is, msg[start:end], if it is written
// first or last; ok is false otherwise, or for no id.
func IDSpan(msg []byte) (start, end int, ok bool) {
	if m := headID.FindSubmatchIndex(msg); m != nil {
		return m[2], m[3], true
	}
	if m := tailID.FindSubmatchIndex(msg); m != nil && isObject(msg) {
		return m[2], m[3], true
	}
	return 0, 0, false
}

// isObject reports whether msg starts as a JSON object.
func isObject(msg []byte) bool {
	msg = bytes.TrimSpace(msg)
	return len(msg) > 0 && msg[0] == '{'
}

// ID returns a message's top-level id as written (see IDSpan), or nil.
func ID(msg []byte) []byte {
	if start, end, ok := IDSpan(msg); ok {
		return msg[start:end]
	}
	return nil
}

// IDOfEnds returns the top-level id of a message of which only the start (head) and the end
// (tail) were kept, or nil.
func IDOfEnds(head, tail []byte) []byte {
	if m := headID.FindSubmatch(head); m != nil {
		return m[1]
	}
	if m := tailID.FindSubmatch(tail); m != nil && isObject(head) {
		return m[1]
	}
	return nil
}
