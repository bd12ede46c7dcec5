package otelcorral

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of every meter and tracer of this package.
const scope = "github.com/corral-go/corral/otelcorral"

// Option configures [New].
type Option interface{ apply(*config) }

type config struct {
	mp   metric.MeterProvider
	tp   trace.TracerProvider
	prop propagation.TextMapPropagator
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets where the metrics go (default: otel.GetMeterProvider() at New).
// It panics if mp is nil.
func WithMeterProvider(mp metric.MeterProvider) Option {
	if mp == nil {
		panic("otelcorral: WithMeterProvider(nil)")
	}
	return optionFunc(func(c *config) { c.mp = mp })
}

// WithTracerProvider sets where the spans go (default: otel.GetTracerProvider() at New).
// It panics if tp is nil.
func WithTracerProvider(tp trace.TracerProvider) Option {
	if tp == nil {
		panic("otelcorral: WithTracerProvider(nil)")
	}
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithPropagator sets how a span's context is written into a job's headers and read back
// (default: otel.GetTextMapPropagator() at New, which is W3C trace context and baggage once
// set up as the README shows). Producer and consumer processes must use the same one. It
// panics if p is nil.
func WithPropagator(p propagation.TextMapPropagator) Option {
	if p == nil {
		panic("otelcorral: WithPropagator(nil)")
	}
	return optionFunc(func(c *config) { c.prop = p })
}

// Telemetry holds the instruments and the tracer of one meter and tracer provider. It is
// safe for concurrent use; make one per process and share it between the queues, pools and
// retry policies it observes (each names itself, and its name is an attribute of its
// metrics).
type Telemetry struct {
	tracer trace.Tracer
	meter  metric.Meter
	prop   propagation.TextMapPropagator
	q      queueInstruments
	r      retryInstruments
}

// New creates the instruments. It fails only if the meter provider refuses one.
func New(opts ...Option) (*Telemetry, error) {
	c := config{}
	for _, o := range opts {
		if o == nil {
			panic("otelcorral: nil option")
		}
		o.apply(&c)
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.prop == nil {
		c.prop = otel.GetTextMapPropagator()
	}
	t := &Telemetry{tracer: c.tp.Tracer(scope), meter: c.mp.Meter(scope), prop: c.prop}
	if err := t.q.init(t.meter); err != nil {
		return nil, err
	}
	if err := t.r.init(t.meter); err != nil {
		return nil, err
	}
	return t, nil
}
