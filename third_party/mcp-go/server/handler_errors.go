package server

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
)

// handlerError reports an error returned by a tool, prompt or resource
// handler, which is otherwise an internal error.
//
// A handler returns mcp.URLElicitationRequiredError when the request cannot
// proceed until the user completes a URL elicitation. Protocol version
// 2025-11-25 reports that as -32042, carrying the elicitations the client
// has to start. Protocol version 2026-07-28 reserves the code and asks for
// the elicitation through a multi round-trip request instead, so the code is
// chosen per request, as for resourceNotFoundCode.
func handlerError(ctx context.Context, id any, err error) *requestError {
	if required, ok := asURLElicitationRequired(err); ok && !mcp.IsModernProtocol(RequestProtocolVersion(ctx)) {
		details := required.JSONRPCError().Error
		return &requestError{id: id, code: details.Code, err: err, data: details.Data}
	}
	// A handler that cannot serve the request without a capability the client did not
	// declare says so with the code 2026-07-28 gives it, naming the capability as the
	// ClientCapabilities object the client would have to declare.
	var missing mcp.MissingRequiredClientCapabilityError
	if errors.As(err, &missing) {
		data := map[string]any{"requiredCapabilities": map[string]any{missing.Capability: map[string]any{}}}
		return &requestError{id: id, code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, err: err, data: data}
	}
	// A handler that finds the request's parameters wrong (a requestState that fails its
	// check, for one) says so as invalid params rather than as its own failure.
	if errors.Is(err, mcp.ErrInvalidParams) {
		return &requestError{id: id, code: mcp.INVALID_PARAMS, err: err}
	}
	return &requestError{id: id, code: mcp.INTERNAL_ERROR, err: err}
}

// asURLElicitationRequired finds a URLElicitationRequiredError in err's chain,
// whether the handler returned the value or a pointer to it.
func asURLElicitationRequired(err error) (mcp.URLElicitationRequiredError, bool) {
	var required mcp.URLElicitationRequiredError
	if errors.As(err, &required) {
		return required, true
	}
	var pointer *mcp.URLElicitationRequiredError
	if errors.As(err, &pointer) && pointer != nil {
		return *pointer, true
	}
	return required, false
}
