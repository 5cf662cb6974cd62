// Package keyshare shares what the members of a tier of orphan processors know of idempotency
// keys (processor README, "Key sharing across a tier").
//
// Routing by trace ID puts trace B (a queue redelivery, a client re-sending with key K) on
// another member than trace A whose root K binds it to. Each member publishes a small record per
// key carried by a trace whose root is known and not detached to a compacted Kafka topic, and
// reads that topic whole from its earliest offset (no consumer group: every member needs every
// record, and a restart rebuilds the table). Records are keyed by a keyed hash, never the key:
// HMAC-SHA256 under a configured secret, truncated to 64 bits, which is also the member's own
// key hash (verdict.Span.KeyHash), so a look-up needs nothing else. The record holds the root's
// gone time, end reason and service name.
//
// A trace that carries a key that binds nowhere yet waits up to Config.Wait before it is decided
// (Gate); the look-ups are counted as local, remote or missed, and a record that arrives for a
// key already decided as missed is counted as late.
package keyshare

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/orphanwatch/orphanwatch/internal/fifo"
	"hash"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Config configures key sharing. The processor's key_sharing section maps onto it.
type Config struct {
	Brokers  []string
	Topic    string
	Secret   []byte
	ClientID string
	// Wait is how long a trace whose key binds nowhere yet waits for another member's record.
	Wait time.Duration
	// MaxRecords bounds the table of records read from the topic (FIFO).
	MaxRecords int
	// MaxWaiting bounds the traces waiting; when full, a trace is decided without waiting.
	MaxWaiting int
	// CreateTopic creates the topic (compacted, Partitions partitions, records deleted after
	// Retention) when it does not exist.
	CreateTopic bool
	Partitions  int32
	Replication int16
	Retention   time.Duration
	// DialTimeout bounds one connection attempt to a broker.
	DialTimeout time.Duration
	// TLS and SASL towards the brokers; nil: none.
	TLS  *tls.Config
	SASL sasl.Mechanism
}

// SASL returns the mechanism for a PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 login (nil for
// another name: Validate rejects it first).
func SASL(mechanism, user, pass string) sasl.Mechanism {
	switch mechanism {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
	return nil
}

// Sharer is one member's side of key sharing: the verdict.KeyDirectory of its Correlator, the
// publisher of its records and the reader of everybody's.
type Sharer struct {
	cfg    Config
	logger *zap.Logger
	macs   sync.Pool

	mu      sync.RWMutex
	table   map[uint64]verdict.RootRef
	order   fifo.Queue[uint64]
	evicted int64

	pubMu     sync.Mutex
	published map[uint64]int64 // key hash -> gone time published, to publish a record once
	pubOrder  fifo.Queue[uint64]

	carMu    sync.Mutex
	carried  map[verdict.TraceID][]uint64
	carOrder fifo.Queue[verdict.TraceID]

	missMu     sync.Mutex
	missed     map[uint64]struct{}
	missOrder  fifo.Queue[uint64]
	updated    chan struct{} // buffered 1: records arrived
	corr       *verdict.Correlator
	prod, cons *kgo.Client
	cancel     context.CancelFunc
	done       chan struct{}

	lookups                               metric.Int64Counter
	publishedN, received, publishErrs, ev metric.Int64Counter
	reg                                   metric.Registration
	waitingN                              func() int
}

// maxCarriedKeys bounds the keys remembered for one trace.
const maxCarriedKeys = 8

// Look-up outcomes, the `outcome` attribute of otelcol_processor_orphan_key_lookups.
const (
	OutcomeLocal  = "local"
	OutcomeRemote = "remote"
	OutcomeMissed = "missed"
	OutcomeLate   = "late"
)

// New returns a Sharer for cfg. It does not connect before Start.
func New(cfg Config, set component.TelemetrySettings) (*Sharer, error) {
	if len(cfg.Secret) == 0 {
		return nil, errors.New("key_sharing.secret: must not be empty")
	}
	s := &Sharer{
		cfg:       cfg,
		logger:    set.Logger,
		table:     map[uint64]verdict.RootRef{},
		published: map[uint64]int64{},
		carried:   map[verdict.TraceID][]uint64{},
		missed:    map[uint64]struct{}{},
		updated:   make(chan struct{}, 1),
	}
	secret := append([]byte(nil), cfg.Secret...)
	s.macs.New = func() any { return hmac.New(sha256.New, secret) }
	m := set.MeterProvider.Meter("github.com/orphanwatch/orphanwatch/processor/orphanprocessor")
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	s.lookups, err = m.Int64Counter("otelcol_processor_orphan_key_lookups",
		metric.WithDescription("Idempotency keys of decided traces, by where they bound: local, remote (another member's record), missed (none within key_sharing.wait); late: a record that came after its key was missed."))
	add(err)
	s.publishedN, err = m.Int64Counter("otelcol_processor_orphan_key_records_published",
		metric.WithDescription("Key records this member published to the key-sharing topic."))
	add(err)
	s.received, err = m.Int64Counter("otelcol_processor_orphan_key_records_received",
		metric.WithDescription("Key records read from the key-sharing topic (every member's, this one's included)."))
	add(err)
	s.publishErrs, err = m.Int64Counter("otelcol_processor_orphan_key_publish_errors",
		metric.WithDescription("Key records that could not be published (broker error or full client buffer)."))
	add(err)
	s.ev, err = m.Int64Counter("otelcol_processor_orphan_key_records_evicted",
		metric.WithDescription("Key records forgotten to stay within key_sharing.max_records (oldest first)."))
	add(err)
	records, err := m.Int64ObservableGauge("otelcol_processor_orphan_key_records",
		metric.WithDescription("Key records held from the key-sharing topic."))
	add(err)
	waiting, err := m.Int64ObservableGauge("otelcol_processor_orphan_key_traces_waiting",
		metric.WithDescription("Traces waiting for a key record (key_sharing.wait)."))
	add(err)
	if len(errs) == 0 {
		s.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			s.mu.RLock()
			n := len(s.table)
			s.mu.RUnlock()
			o.ObserveInt64(records, int64(n))
			if f := s.waitingN; f != nil {
				o.ObserveInt64(waiting, int64(f()))
			}
			return nil
		}, records, waiting)
		add(err)
	}
	return s, errors.Join(errs...)
}

// Hash returns the keyed hash of an idempotency key: HMAC-SHA256 under the secret, its first 64
// bits, never zero. It replaces the reader's FNV-1a hash when keys are shared, so that what
// leaves the process cannot be reversed by hashing guessed keys without the secret.
func (s *Sharer) Hash(key string) uint64 {
	m := s.macs.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(key))
	var sum [sha256.Size]byte
	h := binary.BigEndian.Uint64(m.Sum(sum[:0]))
	s.macs.Put(m)
	if h == 0 {
		return 1
	}
	return h
}

// Attach makes s the key directory of c.
func (s *Sharer) Attach(c *verdict.Correlator) {
	s.corr = c
	c.SetKeyDirectory(s)
}

// Start connects, creates the topic if configured, and starts reading it from the start.
func (s *Sharer) Start(ctx context.Context) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.ClientID(s.cfg.ClientID),
		kgo.DialTimeout(s.cfg.DialTimeout),
	}
	if s.cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.cfg.TLS))
	}
	if s.cfg.SASL != nil {
		opts = append(opts, kgo.SASL(s.cfg.SASL))
	}
	prod, err := kgo.NewClient(append(opts,
		kgo.DefaultProduceTopic(s.cfg.Topic),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(10_000),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.AllowAutoTopicCreation(),
	)...)
	if err != nil {
		return fmt.Errorf("key_sharing: %w", err)
	}
	if s.cfg.CreateTopic {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.createTopic(cctx, prod)
		cancel()
		if err != nil {
			// Not fatal: a broker may be down at start; the producer creates the topic on first
			// use (uncompacted) if allowed. Logged for the operator.
			s.logger.Warn("key_sharing: could not create the topic", zap.String("topic", s.cfg.Topic), zap.Error(err))
		}
	}
	cons, err := kgo.NewClient(append(opts,
		kgo.ConsumeTopics(s.cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(time.Second), // a topic created after Start is found soon
	)...)
	if err != nil {
		prod.Close()
		return fmt.Errorf("key_sharing: %w", err)
	}
	s.prod, s.cons = prod, cons
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.read(rctx)
	return nil
}

func (s *Sharer) createTopic(ctx context.Context, cl *kgo.Client) error {
	adm := kadm.NewClient(cl)
	ret := fmt.Sprint(s.cfg.Retention.Milliseconds())
	policy := "compact,delete"
	resp, err := adm.CreateTopic(ctx, s.cfg.Partitions, s.cfg.Replication, map[string]*string{
		"cleanup.policy": &policy,
		"retention.ms":   &ret,
	}, s.cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return err
}

// Shutdown stops reading and flushes what is being published (bounded by ctx).
func (s *Sharer) Shutdown(ctx context.Context) error {
	if s.cancel == nil {
		if s.reg != nil {
			return s.reg.Unregister()
		}
		return nil
	}
	s.cancel()
	<-s.done
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := s.prod.Flush(fctx)
	cancel()
	s.prod.Close()
	s.cons.Close()
	if s.reg != nil {
		err = errors.Join(err, s.reg.Unregister())
	}
	return err
}

// read applies every record of the topic to the table.
func (s *Sharer) read(ctx context.Context) {
	defer close(s.done)
	for {
		fs := s.cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		failed := false
		fs.EachError(func(t string, p int32, err error) {
			failed = true
			s.logger.Debug("key_sharing: fetch error", zap.String("topic", t), zap.Int32("partition", p), zap.Error(err))
		})
		n := 0
		var late int64
		fs.EachRecord(func(r *kgo.Record) {
			h, ref, ok := decode(r.Key, r.Value)
			if !ok {
				return
			}
			n++
			if s.put(h, ref) {
				late++
			}
		})
		if n == 0 && failed {
			// Brokers down or the topic missing: do not spin on errors.
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
		if n > 0 {
			s.received.Add(ctx, int64(n))
			if late > 0 {
				s.lookups.Add(ctx, late, metric.WithAttributes(attribute.String("outcome", OutcomeLate)))
			}
			select {
			case s.updated <- struct{}{}:
			default:
			}
		}
	}
}

// put stores a record; it reports whether its key had been decided as missed (a late record).
func (s *Sharer) put(h uint64, ref verdict.RootRef) (late bool) {
	s.mu.Lock()
	if _, ok := s.table[h]; !ok {
		for len(s.table) >= s.cfg.MaxRecords {
			old, ok := s.order.Pop()
			if !ok {
				break
			}
			delete(s.table, old)
			s.evicted++
			s.ev.Add(context.Background(), 1)
		}
		s.order.Push(h)
	}
	s.table[h] = ref
	s.mu.Unlock()
	s.missMu.Lock()
	if _, ok := s.missed[h]; ok {
		delete(s.missed, h)
		late = true
	}
	s.missMu.Unlock()
	return late
}

// Lookup implements verdict.KeyDirectory.
func (s *Sharer) Lookup(h uint64) (verdict.RootRef, bool) {
	s.mu.RLock()
	r, ok := s.table[h]
	s.mu.RUnlock()
	return r, ok
}

// Publish implements verdict.KeyDirectory: the record is handed to the producer without
// waiting (a full buffer drops it, counted as a publish error). A key is published once per
// gone time.
func (s *Sharer) Publish(h uint64, ref verdict.RootRef) {
	if s.prod == nil {
		return
	}
	s.pubMu.Lock()
	if g, ok := s.published[h]; ok && g == ref.Gone {
		s.pubMu.Unlock()
		return
	}
	if _, ok := s.published[h]; !ok {
		for len(s.published) >= s.cfg.MaxRecords {
			old, ok := s.pubOrder.Pop()
			if !ok {
				break
			}
			delete(s.published, old)
		}
		s.pubOrder.Push(h)
	}
	s.published[h] = ref.Gone
	s.pubMu.Unlock()
	key, val := encode(h, ref)
	ctx := context.Background()
	s.prod.TryProduce(ctx, &kgo.Record{Key: key, Value: val}, func(_ *kgo.Record, err error) {
		if err != nil {
			s.publishErrs.Add(ctx, 1)
			s.logger.Debug("key_sharing: publish failed", zap.Error(err))
			s.pubMu.Lock()
			delete(s.published, h) // publish again when the key is seen again
			s.pubMu.Unlock()
			return
		}
		s.publishedN.Add(ctx, 1)
	})
}

// Carried implements verdict.KeyDirectory: trace t carried key hash h.
func (s *Sharer) Carried(t verdict.TraceID, h uint64) {
	s.carMu.Lock()
	defer s.carMu.Unlock()
	keys, ok := s.carried[t]
	if !ok {
		for len(s.carried) >= s.cfg.MaxRecords {
			old, ok := s.carOrder.Pop()
			if !ok {
				break
			}
			delete(s.carried, old)
		}
		s.carOrder.Push(t)
	}
	for _, k := range keys {
		if k == h {
			return
		}
	}
	if len(keys) < maxCarriedKeys {
		s.carried[t] = append(keys, h)
	}
}

// keysOf returns the keys trace t carried.
func (s *Sharer) keysOf(t verdict.TraceID) []uint64 {
	s.carMu.Lock()
	defer s.carMu.Unlock()
	return s.carried[t]
}

// forget drops what is kept of trace t's keys once it is decided.
func (s *Sharer) forget(t verdict.TraceID) {
	s.carMu.Lock()
	delete(s.carried, t) // its entry in carOrder goes when it reaches the front
	s.carMu.Unlock()
}

// bound reports whether every key is bound, and counts the look-ups when final is set.
func (s *Sharer) bound(keys []uint64, final bool) bool {
	all := true
	var local, remote, missed int64
	for _, k := range keys {
		switch s.corr.KeyBinding(k) {
		case verdict.BindingLocal:
			local++
		case verdict.BindingRemote:
			remote++
		default:
			all = false
			missed++
			if final {
				s.noteMissed(k)
			}
		}
	}
	if final {
		ctx := context.Background()
		if local > 0 {
			s.lookups.Add(ctx, local, metric.WithAttributes(attribute.String("outcome", OutcomeLocal)))
		}
		if remote > 0 {
			s.lookups.Add(ctx, remote, metric.WithAttributes(attribute.String("outcome", OutcomeRemote)))
		}
		if missed > 0 {
			s.lookups.Add(ctx, missed, metric.WithAttributes(attribute.String("outcome", OutcomeMissed)))
		}
	}
	return all
}

func (s *Sharer) noteMissed(k uint64) {
	s.missMu.Lock()
	defer s.missMu.Unlock()
	if _, ok := s.missed[k]; ok {
		return
	}
	for len(s.missed) >= s.cfg.MaxRecords {
		old, ok := s.missOrder.Pop()
		if !ok {
			break
		}
		delete(s.missed, old)
	}
	s.missed[k] = struct{}{}
	s.missOrder.Push(k)
}

// Record format: key = the 8 bytes of the keyed hash (big endian); value = version 1, gone time
// (unix ns, 8 bytes big endian), end reason, detached (always 0: only non-detached roots are
// published), service name length (1 byte) and the name, at most 255 bytes.
const recordVersion = 1

func encode(h uint64, ref verdict.RootRef) (key, val []byte) {
	key = binary.BigEndian.AppendUint64(nil, h)
	svc := ref.Service
	if len(svc) > 255 {
		svc = svc[:255]
	}
	val = make([]byte, 0, 12+len(svc))
	val = append(val, recordVersion)
	val = binary.BigEndian.AppendUint64(val, uint64(ref.Gone))
	val = append(val, byte(ref.Reason), 0, byte(len(svc)))
	val = append(val, svc...)
	return key, val
}

func decode(key, val []byte) (uint64, verdict.RootRef, bool) {
	if len(key) != 8 || len(val) < 12 || val[0] != recordVersion || val[10] != 0 || len(val) != 12+int(val[11]) {
		return 0, verdict.RootRef{}, false
	}
	h := binary.BigEndian.Uint64(key)
	if h == 0 {
		return 0, verdict.RootRef{}, false
	}
	return h, verdict.RootRef{
		Gone:    int64(binary.BigEndian.Uint64(val[1:9])),
		Reason:  verdict.EndReason(val[9]),
		Service: string(val[12:]),
	}, true
}
