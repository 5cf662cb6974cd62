package orphankeysextension

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/kafka/configkafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/plugin/kzap"
	"go.uber.org/zap"
)

// clientOpts maps contrib's configkafka.ClientConfig onto franz-go options, as contrib's kafka
// receiver and exporter do. Contrib's own constructor (NewFranzClient in
// github.com/open-telemetry/opentelemetry-collector-contrib/internal/kafka) is internal to
// contrib and cannot be imported, so this follows its commonOpts (v0.165.1) for what the
// extension supports: brokers, tls, auth.sasl PLAIN and SCRAM-SHA-256/512, client_id,
// rack_id, metadata.refresh_interval and retry, conn_idle_timeout, dial_timeout,
// protocol_version. Kerberos, AWS_MSK_IAM_OAUTHBEARER and OAUTHBEARER are refused by Validate.
func clientOpts(ctx context.Context, cfg configkafka.ClientConfig, logger *zap.Logger) ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.WithLogger(kzap.New(logger.Named("franz"))),
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DisableClientMetrics(),
	}
	if cfg.TLS != nil {
		tc, err := cfg.TLS.LoadTLSConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		if tc != nil {
			opts = append(opts, kgo.DialTLSConfig(tc))
		}
	}
	if a := cfg.Authentication.SASL; a != nil {
		switch a.Mechanism {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: a.Username, Pass: a.Password}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: a.Username, Pass: a.Password}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: a.Username, Pass: a.Password}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("auth.sasl.mechanism: %q is not supported by orphan_keys", a.Mechanism)
		}
	}
	if cfg.Authentication.Kerberos != nil {
		return nil, errors.New("auth.kerberos: not supported by orphan_keys")
	}
	if cfg.ClientID != "" {
		opts = append(opts, kgo.ClientID(cfg.ClientID))
	}
	if cfg.RackID != "" {
		opts = append(opts, kgo.Rack(cfg.RackID))
	}
	if cfg.Metadata.RefreshInterval > 0 {
		opts = append(opts, kgo.MetadataMaxAge(cfg.Metadata.RefreshInterval))
	}
	opts = append(opts, kgo.RequestRetries(cfg.Metadata.Retry.Max))
	if b := cfg.Metadata.Retry.Backoff; b > 0 {
		opts = append(opts, kgo.RetryBackoffFn(retryBackoff(b)))
	}
	if cfg.ConnIdleTimeout > 0 {
		opts = append(opts, kgo.ConnIdleTimeout(cfg.ConnIdleTimeout))
	}
	if cfg.DialTimeout > 0 {
		opts = append(opts, kgo.DialTimeout(cfg.DialTimeout))
	}
	if cfg.ProtocolVersion != "" {
		v := kversion.FromString(cfg.ProtocolVersion)
		if v == nil {
			return nil, fmt.Errorf("protocol_version: invalid %q", cfg.ProtocolVersion)
		}
		opts = append(opts, kgo.MinVersions(v), kgo.MaxVersions(v))
	}
	return opts, nil
}

// topicError is a key topic that cannot be used as it is (not compacted, missing with
// topic.create off): a configuration mistake, not a broker being down.
type topicError struct{ error }

// ensureTopic creates the key topic when it is missing (topic.create) and checks it otherwise:
// a topic whose cleanup.policy does not include compact is a topicError; other partitions or
// replication factor than configured are logged.
func (k *keys) ensureTopic(ctx context.Context, adm *kadm.Client) error {
	tc := k.cfg.Topic
	tds, err := adm.ListTopics(ctx, tc.Name)
	if err != nil {
		return err
	}
	td, ok := tds[tc.Name]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		if !tc.Create {
			return topicError{fmt.Errorf("topic %q does not exist and topic.create is false: create it compacted (README \"The topic\")", tc.Name)}
		}
		policy := tc.CleanupPolicy
		configs := map[string]*string{"cleanup.policy": &policy}
		if policy == CleanupCompactDelete {
			ret := fmt.Sprint(tc.Retention.Milliseconds())
			configs["retention.ms"] = &ret
		}
		resp, err := adm.CreateTopic(ctx, tc.Partitions, tc.ReplicationFactor, configs, tc.Name)
		if err == nil {
			err = resp.Err
		}
		switch {
		case err == nil:
			k.logger.Info("orphan_keys: created the key topic", zap.String("topic", tc.Name),
				zap.Int32("partitions", resp.NumPartitions), zap.Int16("replication_factor", resp.ReplicationFactor),
				zap.String("cleanup.policy", policy))
			return nil
		case errors.Is(err, kerr.TopicAlreadyExists):
			// Another member created it meanwhile: check it as any present topic.
			if tds, err = adm.ListTopics(ctx, tc.Name); err != nil {
				return err
			}
			td = tds[tc.Name]
		default:
			return fmt.Errorf("creating topic %q: %w", tc.Name, err)
		}
	}
	if td.Err != nil {
		return fmt.Errorf("topic %q: %w", tc.Name, td.Err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, tc.Name)
	if err != nil {
		return fmt.Errorf("describing topic %q: %w", tc.Name, err)
	}
	rc, err := rcs.On(tc.Name, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return fmt.Errorf("describing topic %q: %w", tc.Name, err)
	}
	policy := "delete" // Kafka's default
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.Value != nil {
			policy = *c.Value
		}
	}
	if !hasCompact(policy) {
		return topicError{fmt.Errorf("topic %q has cleanup.policy=%s: it must include compact (one record per key and request is kept, and a restart reads the topic whole); "+
			"alter it (kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config cleanup.policy=[compact,delete]) or name another topic in topic.name",
			tc.Name, policy, tc.Name)}
	}
	if n := len(td.Partitions); tc.Partitions > 0 && n != int(tc.Partitions) {
		k.logger.Warn("orphan_keys: the key topic has another partition count than topic.partitions (every member reads every partition: it still works)",
			zap.String("topic", tc.Name), zap.Int("partitions", n), zap.Int32("configured", tc.Partitions))
	}
	if n := td.Partitions.NumReplicas(); tc.ReplicationFactor > 0 && n != int(tc.ReplicationFactor) {
		k.logger.Warn("orphan_keys: the key topic has another replication factor than topic.replication_factor",
			zap.String("topic", tc.Name), zap.Int("replication_factor", n), zap.Int16("configured", tc.ReplicationFactor))
	}
	if policy != tc.CleanupPolicy {
		k.logger.Warn("orphan_keys: the key topic has another cleanup.policy than topic.cleanup_policy",
			zap.String("topic", tc.Name), zap.String("cleanup.policy", policy), zap.String("configured", tc.CleanupPolicy))
	}
	return nil
}

func hasCompact(policy string) bool {
	for _, p := range strings.Split(policy, ",") {
		if strings.TrimSpace(p) == "compact" {
			return true
		}
	}
	return false
}

// retryBackoff doubles the wait from min on each failure up to franz-go's 5 s cap (or min, when
// larger), as contrib's clients do (without their jitter).
func retryBackoff(first time.Duration) func(int) time.Duration {
	ceiling := max(5*time.Second, first)
	return func(fails int) time.Duration {
		d := first
		for i := 1; i < fails && d < ceiling; i++ {
			d *= 2
		}
		return min(d, ceiling)
	}
}
