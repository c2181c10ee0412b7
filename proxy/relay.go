package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// What one replica sends another that holds a call waiting for input (see Relay): the
// client's answers, and the answer to them.
type (
	relayMsg struct {
		Owner          string             `json:"owner"`
		InputResponses mcp.InputResponses `json:"inputResponses,omitempty"`
	}
	relayAnswer struct {
		Result        json.RawMessage   `json:"result,omitempty"`
		InputRequests mcp.InputRequests `json:"inputRequests,omitempty"`
		RequestState  string            `json:"requestState,omitempty"`
		Error         *relayError       `json:"error,omitempty"`
	}
	relayError struct {
		Code       int    `json:"code,omitempty"` // -32021 or -32602; 0 for a call's own failure
		Capability string `json:"capability,omitempty"`
		Message    string `json:"message"`
	}
)

// relayed passes a client's answers to the replica that holds the call they continue.
func (b *bridge) relayed(ctx context.Context, owner string, p mcp.MultiRoundTripParams) (any, *mcp.MultiRoundTripResult, error) {
	msg, err := json.Marshal(relayMsg{Owner: owner, InputResponses: p.InputResponses})
	if err != nil {
		return nil, nil, err
	}
	// The holder answers within its own wait; past it (plus a margin for the way back),
	// the answer is not coming.
	ctx, cancel := context.WithTimeout(ctx, b.wait+time.Minute)
	defer cancel()
	raw, held, err := b.relay.Send(ctx, p.RequestState, msg)
	if err != nil {
		return nil, nil, err
	}
	if !held {
		return nil, nil, errStale(b.wait)
	}
	var a relayAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, nil, err
	}
	switch {
	case a.Error != nil && a.Error.Code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY:
		return nil, nil, mcp.MissingRequiredClientCapabilityError{Capability: a.Error.Capability}
	case a.Error != nil && a.Error.Code == mcp.INVALID_PARAMS:
		return nil, nil, errStale(b.wait)
	case a.Error != nil:
		return nil, nil, errors.New(a.Error.Message)
	case a.InputRequests != nil:
		return nil, &mcp.MultiRoundTripResult{InputRequests: a.InputRequests, RequestState: a.RequestState}, nil
	}
	return a.Result, nil, nil
}

// serveRelayed answers another replica that passed on a client's answers to a call held
// here.
func (b *bridge) serveRelayed(ctx context.Context, id string, msg []byte) []byte {
	var m relayMsg
	var a relayAnswer
	if err := json.Unmarshal(msg, &m); err != nil {
		a.Error = &relayError{Message: "undecodable relay message: " + err.Error()}
	} else {
		ctx, cancel := context.WithTimeout(ctx, b.wait)
		defer cancel()
		// The progress of a call held here cannot reach a request another replica serves.
		res, asks, err := b.resume(ctx, m.Owner, mcp.MultiRoundTripParams{InputResponses: m.InputResponses, RequestState: id}, nil)
		var missing mcp.MissingRequiredClientCapabilityError
		switch {
		case errors.As(err, &missing):
			a.Error = &relayError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, Capability: missing.Capability, Message: err.Error()}
		case errors.Is(err, mcp.ErrInvalidParams):
			a.Error = &relayError{Code: mcp.INVALID_PARAMS, Message: err.Error()}
		case err != nil:
			a.Error = &relayError{Message: err.Error()}
		case asks != nil:
			a.InputRequests, a.RequestState = asks.InputRequests, asks.RequestState
		default:
			a.Result, _ = res.(json.RawMessage)
		}
	}
	out, _ := json.Marshal(a)
	return out
}
