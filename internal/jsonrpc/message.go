package jsonrpc

import (
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
)

// Message is a JSON-RPC message's envelope, decoded once where the message is read; the
// server that serves it decodes its params.
type Message struct {
	ID     mcp.RequestId // as the sender wrote it (mcp.ParseRequestId); nil if none
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage
	// Malformed is set for text that is not JSON; Bad, for JSON that is not a JSON-RPC
	// message, with why.
	Malformed bool
	Bad       string
}

// Parse decodes a message's envelope.
func Parse(msg []byte) Message {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	var m Message
	if err := json.Unmarshal(msg, &env); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			m.Bad = "a JSON-RPC message is a JSON object"
		} else {
			m.Malformed = true
		}
		return m
	}
	m.Params, m.Result, m.Error = env.Params, env.Result, env.Error
	if len(env.Method) > 0 && json.Unmarshal(env.Method, &m.Method) != nil {
		m.Bad = "method must be a string"
	}
	if len(env.ID) > 0 {
		id, err := mcp.ParseRequestId(env.ID)
		if err != nil {
			m.Bad = "id must be a string or an integer"
		}
		m.ID = id
	}
	return m
}

// IsRequest reports a request: a message owed an answer.
func (m Message) IsRequest() bool {
	return !m.Malformed && m.Bad == "" && !m.ID.IsNil() && m.Method != ""
}

// IsAnswer reports an answer to a request of the reader's own.
func (m Message) IsAnswer() bool {
	return !m.Malformed && m.Bad == "" && m.Method == "" && !m.ID.IsNil() && (m.Result != nil || m.Error != nil)
}
