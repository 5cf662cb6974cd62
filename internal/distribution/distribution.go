// Package distribution lists the components of the orphanwatch collector distribution, for
// cmd/otelcol-orphanwatch and for the tests that build the same collector in-process
// (test/scaleout): one list, so the two cannot drift apart.
package distribution

import (
	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/kafkaexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusremotewriteexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/jaegerreceiver"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/kafkareceiver"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/zipkinreceiver"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/processor/memorylimiterprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"
	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"
	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// Components lists the factories of the orphanwatch distribution. Every component that listens
// binds localhost by default (the contrib jaeger receiver's defaults are localhost:14250, 14268,
// 6831 and 6832); the kafka receiver and exporter are clients of the brokers configured.
func Components() (otelcol.Factories, error) {
	var err error
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](
		otlpreceiver.NewFactory(),
		zipkinreceiver.NewFactory(),
		jaegerreceiver.NewFactory(),
		// kafka: the orphanwatch tier behind a front tier that partitions by trace ID
		// (config/scaleout, README "Scale").
		kafkareceiver.NewFactory(),
	); err != nil {
		return f, err
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](
		memorylimiterprocessor.NewFactory(),
		batchprocessor.NewFactory(),
		orphanprocessor.NewFactory(),
	); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		orphanmetricsexporter.NewFactory(),
		otlpexporter.NewFactory(),
		otlphttpexporter.NewFactory(),
		debugexporter.NewFactory(),
		// kafka: the front tier, partitioned by trace ID (partition_traces_by_id).
		kafkaexporter.NewFactory(),
		// prometheusremotewrite: push the orphanmetrics connector's metrics to Prometheus,
		// Mimir or Cortex (README "Push the metrics").
		prometheusremotewriteexporter.NewFactory(),
	); err != nil {
		return f, err
	}
	if f.Connectors, err = otelcol.MakeFactoryMap[connector.Factory](
		// orphanmetrics: the exporter's series as OTLP metrics, into any metrics pipeline.
		orphanmetricsconnector.NewFactory(),
	); err != nil {
		return f, err
	}
	if f.Extensions, err = otelcol.MakeFactoryMap[extension.Factory](
		healthcheckextension.NewFactory(),
		// orphan_keys: idempotency keys shared across the members of a tier (config/scaleout).
		orphankeysextension.NewFactory(),
	); err != nil {
		return f, err
	}
	return f, nil
}
