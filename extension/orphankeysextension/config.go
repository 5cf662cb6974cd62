package orphankeysextension

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/kafka/configkafka"
	"go.opentelemetry.io/collector/config/configopaque"
)

// Config is the configuration of the `orphan_keys` extension (README "Configuration").
//
// The Kafka client is contrib's configkafka.ClientConfig, squashed: brokers, client_id, tls,
// auth (sasl), metadata, dial_timeout... are the same keys, in the same shape, as the kafka
// receiver's and exporter's.
type Config struct {
	configkafka.ClientConfig `mapstructure:",squash"`

	// Topic is the compacted topic of key records and how it is created and checked.
	Topic TopicConfig `mapstructure:"topic"`
	// Secret keys the HMAC-SHA256 of idempotency keys: the same on every member of a tier, at
	// least 16 bytes, not only whitespace, and at least 6 distinct bytes (secretEntropy). Keys
	// are low-entropy: without the secret, their hashes could be reversed by trying guesses.
	Secret configopaque.String `mapstructure:"secret"`
	// Wait: a trace carrying a key that binds nowhere yet is held this long, after its decision
	// is due, for another member's record (by every orphan processor using the extension).
	// 0: never waits.
	Wait time.Duration `mapstructure:"wait"`
	// MaxRecords bounds the records kept from the topic, and each processor's other key tables
	// (FIFO).
	MaxRecords int `mapstructure:"max_records"`
	// MaxWaiting bounds the traces waiting in each processor; when full, traces are decided
	// without waiting.
	MaxWaiting int `mapstructure:"max_waiting"`
}

// TopicConfig is the key topic: its name, and the settings it is created with when missing and
// checked against when present.
type TopicConfig struct {
	// Name of the topic every member publishes to and reads whole.
	Name string `mapstructure:"name"`
	// Create creates the topic at start when it is missing. When false, a missing topic is an
	// error.
	Create bool `mapstructure:"create"`
	// Partitions and ReplicationFactor of a created topic; -1 takes the broker's default
	// (num.partitions, default.replication.factor). A present topic with other values is
	// logged (a warning), not refused: every member reads every partition.
	Partitions        int32 `mapstructure:"partitions"`
	ReplicationFactor int16 `mapstructure:"replication_factor"`
	// CleanupPolicy of a created topic: "compact" or "compact,delete" (Kafka's cleanup.policy).
	// A present topic whose cleanup.policy does not include compact is refused: the topic
	// would grow without bound and a restart would replay every record ever written.
	CleanupPolicy string `mapstructure:"cleanup_policy"`
	// Retention (retention.ms) of a created topic: how long records are kept under
	// "compact,delete". Ignored under "compact".
	Retention time.Duration `mapstructure:"retention"`
	// CheckTimeout bounds how long Start waits for the brokers to create or check the topic;
	// when they do not answer in time, start-up goes on and the check is retried in the
	// background.
	CheckTimeout time.Duration `mapstructure:"check_timeout"`
}

// Cleanup policies accepted for the key topic.
const (
	CleanupCompact       = "compact"
	CleanupCompactDelete = "compact,delete"
)

// Validate names each bad field as it is written in YAML. The Kafka client's own fields
// (brokers, tls, auth...) are checked by configkafka's Validate, which the collector calls too.
func (c *Config) Validate() error {
	var errs []error
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			errs = append(errs, fmt.Errorf("brokers[%d]: must not be empty", i))
		}
	}
	if a := c.Authentication.SASL; a != nil {
		switch a.Mechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
			if a.Username == "" {
				errs = append(errs, errors.New("auth.sasl.username: must not be empty"))
			}
		default:
			errs = append(errs, fmt.Errorf("auth.sasl.mechanism: %q is not supported by orphan_keys, use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", a.Mechanism))
		}
	}
	if c.Authentication.Kerberos != nil {
		errs = append(errs, errors.New("auth.kerberos: not supported by orphan_keys, use auth.sasl"))
	}
	if strings.TrimSpace(c.Topic.Name) == "" {
		errs = append(errs, errors.New("topic.name: must not be empty"))
	}
	if c.Topic.Partitions <= 0 && c.Topic.Partitions != -1 {
		errs = append(errs, fmt.Errorf("topic.partitions: must be positive or -1 (the broker's default), got %d", c.Topic.Partitions))
	}
	if c.Topic.ReplicationFactor <= 0 && c.Topic.ReplicationFactor != -1 {
		errs = append(errs, fmt.Errorf("topic.replication_factor: must be positive or -1 (the broker's default), got %d", c.Topic.ReplicationFactor))
	}
	switch c.Topic.CleanupPolicy {
	case CleanupCompact:
	case CleanupCompactDelete:
		if c.Topic.Retention <= 0 {
			errs = append(errs, fmt.Errorf("topic.retention: must be positive under cleanup_policy %q, got %s", CleanupCompactDelete, c.Topic.Retention))
		}
	default:
		errs = append(errs, fmt.Errorf("topic.cleanup_policy: must be %q or %q (key records are compacted per key), got %q", CleanupCompact, CleanupCompactDelete, c.Topic.CleanupPolicy))
	}
	if c.Topic.CheckTimeout <= 0 {
		errs = append(errs, fmt.Errorf("topic.check_timeout: must be positive, got %s", c.Topic.CheckTimeout))
	}
	if n := len(c.Secret); n < minSecretBytes {
		errs = append(errs, fmt.Errorf("secret: must be at least %d bytes, got %d", minSecretBytes, n))
	} else if err := secretEntropy(string(c.Secret)); err != nil {
		errs = append(errs, err)
	}
	if c.Wait < 0 {
		errs = append(errs, fmt.Errorf("wait: must not be negative, got %s", c.Wait))
	}
	if c.MaxRecords <= 0 {
		errs = append(errs, fmt.Errorf("max_records: must be positive, got %d", c.MaxRecords))
	}
	if c.MaxWaiting <= 0 {
		errs = append(errs, fmt.Errorf("max_waiting: must be positive, got %d", c.MaxWaiting))
	}
	return errors.Join(errs...)
}

// minSecretBytes is the shortest secret accepted: 128 bits.
const minSecretBytes = 16

// minSecretDistinct is the fewest distinct bytes a secret must have. A secret that is a
// character repeated ("aaaa...", 16 spaces) or a short pattern ("abababab...") has none of the
// entropy its length promises. Six keeps false refusals of random secrets negligible: 16
// random hex digits (openssl rand -hex 8, the shortest random secret accepted) have fewer than
// 6 distinct ones about 4 times in 100,000; 32 hex digits or base64 practically never.
const minSecretDistinct = 6

// secretEntropy refuses a secret that cannot be random: only whitespace (an unset or
// mis-quoted environment variable), or fewer than minSecretDistinct distinct bytes. The error
// names the field, never the secret.
func secretEntropy(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("secret: must not be only whitespace (an unset environment variable?); use random bytes, e.g. openssl rand -hex 32")
	}
	var seen [256]bool
	distinct := 0
	for i := 0; i < len(s); i++ {
		if !seen[s[i]] {
			seen[s[i]] = true
			distinct++
		}
	}
	if distinct < minSecretDistinct {
		return fmt.Errorf("secret: must have at least %d distinct bytes, got %d (a repeated character or pattern has no entropy); use random bytes, e.g. openssl rand -hex 32", minSecretDistinct, distinct)
	}
	return nil
}
