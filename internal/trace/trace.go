// Package trace carries W3C trace context (traceparent, tracestate) through toolsift: in
// from a request's HTTP headers or its params._meta (the MCP convention since 2026-07-28,
// SEP-414), and out to the upstream servers, in the HTTP headers of HTTP servers and in
// the _meta of every call. Spans go through OpenTelemetry's global tracer, a no-op unless
// tracing is configured (telemetry.StartTracing).
package trace

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// propagator is W3C Trace Context, whatever the global one is: context passes through
// toolsift even when it records no span of its own.
var propagator = propagation.TraceContext{}

// metaKeys are the _meta keys of trace context (SEP-414).
var metaKeys = []string{"traceparent", "tracestate"}

// FromHeaders returns ctx with the trace context of h, if it has one.
func FromHeaders(ctx context.Context, h http.Header) context.Context {
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// FromMeta returns ctx with the trace context of a request's _meta, if it has one; it
// wins over the headers', being the request's own.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	c := propagation.MapCarrier{}
	for _, k := range metaKeys {
		if v, ok := meta[k].(string); ok {
			c[k] = v
		}
	}
	if len(c) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, c)
}

// Inject writes ctx's trace context into h.
func Inject(ctx context.Context, h http.Header) {
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Meta returns ctx's trace context as _meta entries; nil without one.
func Meta(ctx context.Context) map[string]any {
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	out := make(map[string]any, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// Start starts a span named name, a child of ctx's.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, oteltrace.Span) {
	return otel.Tracer("github.com/toolsift/toolsift").Start(ctx, name, oteltrace.WithAttributes(attrs...))
}

// ID returns the ID of ctx's trace, "" without one.
func ID(ctx context.Context) string {
	if sc := oteltrace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// Transport adds the request's trace context to its headers.
type Transport struct{ Base http.RoundTripper }

func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if sc := oteltrace.SpanContextFromContext(req.Context()); sc.IsValid() {
		req = req.Clone(req.Context())
		Inject(req.Context(), req.Header)
	}
	return t.Base.RoundTrip(req)
}
