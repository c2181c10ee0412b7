package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// The stdio connection's side facing toolsift: its requests to the client (sampling,
// elicitation, roots), and the session state mcp-go's server keeps on it.

// answered hands the client's answer to the request of toolsift's it is for.
func (c *stdio) answered(m message) {
	a := answer{result: m.Result}
	if m.Error != nil {
		a.err = &mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: string(m.Error)}
		_ = json.Unmarshal(m.Error, a.err) // a malformed error is still an error
	}
	id, isInt := m.ID.Value().(int64)
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id) // a second answer to it goes nowhere
	c.mu.Unlock()
	if !isInt || !ok {
		c.s.log.Debug("an answer to no request of toolsift's", "id", m.ID.String())
		return
	}
	ch <- a // buffered for the one answer
}

// request sends the client a request and decodes its answer's result into result.
func (c *stdio) request(ctx context.Context, method string, params, result any) error {
	ch := make(chan answer, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	c.write(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{mcp.JSONRPC_VERSION, id, method, params})
	select {
	case a := <-ch:
		if a.err != nil {
			return fmt.Errorf("%s: the client answered error %d: %s", method, a.err.Code, a.err.Message)
		}
		if err := json.Unmarshal(a.result, result); err != nil {
			return fmt.Errorf("%s: decoding the client's answer: %w", method, err)
		}
		return nil
	case <-c.closed:
		return fmt.Errorf("%s: the client is gone", method)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *stdio) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := c.request(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams, &res); err != nil {
		return nil, err
	}
	content, err := mcp.ParseSamplingContent(res.Content)
	if err != nil {
		return nil, fmt.Errorf("sampling: the client's answer: %w", err)
	}
	res.Content = content
	return &res, nil
}

func (c *stdio) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var res mcp.ElicitationResult
	if err := c.request(ctx, string(mcp.MethodElicitationCreate), req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *stdio) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var res mcp.ListRootsResult
	if err := c.request(ctx, string(mcp.MethodListRoots), req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// SessionID is "stdio", as mcp-go's: a stdio connection has one session.
func (c *stdio) SessionID() string { return "stdio" }

func (c *stdio) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.notes }

func (c *stdio) Initialize() {
	c.level.Store(mcp.LoggingLevelError)
	c.initialized.Store(true)
}

func (c *stdio) Initialized() bool { return c.initialized.Load() }

func (c *stdio) SetLogLevel(level mcp.LoggingLevel) { c.level.Store(level) }

func (c *stdio) GetLogLevel() mcp.LoggingLevel {
	level, _ := c.level.Load().(mcp.LoggingLevel)
	return cmp.Or(level, mcp.LoggingLevelError)
}

func (c *stdio) GetClientInfo() mcp.Implementation {
	info, _ := c.info.Load().(mcp.Implementation)
	return info
}

func (c *stdio) SetClientInfo(info mcp.Implementation) { c.info.Store(info) }

func (c *stdio) GetClientCapabilities() mcp.ClientCapabilities {
	caps, _ := c.caps.Load().(mcp.ClientCapabilities)
	return caps
}

func (c *stdio) SetClientCapabilities(caps mcp.ClientCapabilities) { c.caps.Store(caps) }

func (c *stdio) ProtocolVersion() string {
	v, _ := c.version.Load().(string)
	return v
}

func (c *stdio) SetProtocolVersion(v string) { c.version.Store(v) }
