package gate

import (
	"bytes"
	"regexp"

	"github.com/toolsift/toolsift/internal/jsonrpc"
)

// mcp-go decodes a request's id into an interface, so a numeric id becomes a float64 and
// comes back rounded: 123456789012345678901234567890 as 1.2345678901234568e+29, which the
// client cannot match to its request. An id too long to survive that is carried through
// mcp-go as a string, and turned back into the client's number in the answer.

// bigIDPrefix marks an id toolsift turned from a number into a string.
const bigIDPrefix = "toolsift-id:"

// wrapBigID returns msg with a top-level id too big for a float64 (an integer of 16 digits
// or more: a float64 holds integers exactly to 2^53) written as a string.
func wrapBigID(msg []byte) []byte {
	start, end, ok := jsonrpc.IDSpan(msg)
	if !ok || !bigInteger.Match(msg[start:end]) {
		return msg
	}
	out := make([]byte, 0, len(msg)+len(bigIDPrefix)+2)
	out = append(out, msg[:start]...)
	out = append(out, '"')
	out = append(out, bigIDPrefix...)
	out = append(out, msg[start:end]...)
	out = append(out, '"')
	return append(out, msg[end:]...)
}

var bigInteger = regexp.MustCompile(`^-?[0-9]{16,}$`)

// wrappedID finds an id wrapBigID made, as mcp-go writes it back.
var wrappedID = regexp.MustCompile(`"id":"` + bigIDPrefix + `(-?[0-9]+)"`)

// unwrapBigID turns an id wrapBigID made back into the client's number.
func unwrapBigID(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(bigIDPrefix)) {
		return msg
	}
	return wrappedID.ReplaceAll(msg, []byte(`"id":$1`))
}
