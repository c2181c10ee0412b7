// Package telemetry is what toolsift's HTTP service offers to watch it by: Prometheus
// metrics (sessions, searches and their misses, calls by server and outcome, latencies,
// upstream states, sign-ins needed) and OpenTelemetry traces sent over OTLP.
package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/toolsift/toolsift/upstream"
)

// Metrics are the service's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	reg           *prometheus.Registry
	sessions      prometheus.Gauge
	searches      *prometheus.CounterVec
	searchSeconds prometheus.Histogram
	calls         *prometheus.CounterVec
	callSeconds   *prometheus.HistogramVec
	signIns       *prometheus.CounterVec
}

// states are the upstream states toolsift_upstream_state reports, one series each.
var states = []upstream.State{upstream.StateStarting, upstream.StateConnected, upstream.StateIdle, upstream.StateFailed,
	upstream.StateDisabled, upstream.StateNeedsLogin, upstream.StatePerUser}

// NewMetrics returns the metrics, reading the upstreams' states from statuses at each scrape.
func NewMetrics(statuses func() []upstream.Status) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.sessions = prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolsift_sessions", Help: "Client sessions open."})
	m.searches = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsift_searches_total",
		Help: "tool_search calls, by result: hit (a tool matched) or miss (none did)."}, []string{"result"})
	m.searchSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "toolsift_search_duration_seconds",
		Help: "Time to answer a tool_search, the hold for the client's re-list included.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9)})
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsift_tool_calls_total",
		Help: "Tool calls, by upstream server and outcome (ok, tool_error, failed, refused, unknown, canceled, sign_in)."}, []string{"server", "outcome"})
	m.callSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolsift_tool_call_duration_seconds",
		Help: "Time to answer a tool call, upstream included, by upstream server.", Buckets: prometheus.ExponentialBuckets(0.005, 4, 9)}, []string{"server"})
	m.signIns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsift_sign_ins_needed_total",
		Help: "Calls answered with a sign-in link: the caller had no working sign-in to the server."}, []string{"server"})
	m.reg.MustRegister(m.sessions, m.searches, m.searchSeconds, m.calls, m.callSeconds, m.signIns,
		upstreams{statuses}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// SessionOpened and SessionEnded count the open sessions.
func (m *Metrics) SessionOpened() {
	if m != nil {
		m.sessions.Inc()
	}
}

func (m *Metrics) SessionEnded() {
	if m != nil {
		m.sessions.Dec()
	}
}

// Searched records a tool_search that found hits tools in d.
func (m *Metrics) Searched(hits int, d time.Duration) {
	if m == nil {
		return
	}
	result := "hit"
	if hits == 0 {
		result = "miss"
	}
	m.searches.WithLabelValues(result).Inc()
	m.searchSeconds.Observe(d.Seconds())
}

// Called records a tool call to server ("" for none) that ended with outcome in d.
func (m *Metrics) Called(server, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(server, outcome).Inc()
	m.callSeconds.WithLabelValues(server).Observe(d.Seconds())
	if outcome == "sign_in" {
		m.signIns.WithLabelValues(server).Inc()
	}
}

// upstreams reports each server's state and tools at scrape time.
type upstreams struct{ statuses func() []upstream.Status }

var (
	stateDesc = prometheus.NewDesc("toolsift_upstream_state", "1 for the state each upstream server is in, 0 for the others.", []string{"server", "state"}, nil)
	toolsDesc = prometheus.NewDesc("toolsift_upstream_tools", "Tools each upstream server offers.", []string{"server"}, nil)
)

func (u upstreams) Describe(ch chan<- *prometheus.Desc) {
	ch <- stateDesc
	ch <- toolsDesc
}

func (u upstreams) Collect(ch chan<- prometheus.Metric) {
	for _, st := range u.statuses() {
		for _, s := range states {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, st.Name, string(s))
		}
		ch <- prometheus.MustNewConstMetric(toolsDesc, prometheus.GaugeValue, float64(st.Tools), st.Name)
	}
}

// StartTracing sends spans to the OTLP/HTTP collector at endpoint (http://host:4318, whose
// /v1/traces takes them; a URL with a path is used as it is) from now on, as the service toolsift of the given version. Call the returned function at
// shutdown: it sends what is left.
func StartTracing(ctx context.Context, endpoint, version string) (func(context.Context) error, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("tracing.otlpEndpoint %q: %w", endpoint, err)
	}
	if u.Path == "" || u.Path == "/" {
		// A collector's address, as OTEL_EXPORTER_OTLP_ENDPOINT is written: traces go to
		// its /v1/traces.
		u.Path = "/v1/traces"
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("tracing.otlpEndpoint %q: %w", endpoint, err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("toolsift"), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return tp.Shutdown, nil
}
