package orphankeysextension

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/bounded"
	"github.com/orphanwatch/orphanwatch/internal/keyshare"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// keys is the orphan_keys extension.
type keys struct {
	cfg    *Config
	logger *zap.Logger
	macs   sync.Pool
	table  *table

	pubMu     sync.Mutex
	published *bounded.Table[recordID, int64] // record -> gone time published, to publish a record once

	subMu   sync.Mutex
	subs    map[int]func([]uint64)
	nextSub int

	client atomic.Pointer[kgo.Client]
	cancel context.CancelFunc
	wg     sync.WaitGroup

	publishedN, received, invalid, publishErrs, evicted metric.Int64Counter
	reg                                                 metric.Registration
	attrs                                               metric.MeasurementOption // extension: the instance's ID
}

// keys is what the components that name the extension find on the host (keyshare.Find).
var _ keyshare.Keys = (*keys)(nil)

func newKeys(cfg *Config, id component.ID, set component.TelemetrySettings) (*keys, error) {
	k := &keys{
		attrs:     metric.WithAttributeSet(attribute.NewSet(attribute.String("extension", id.String()))),
		cfg:       cfg,
		logger:    set.Logger,
		table:     newTable(cfg.MaxRecords),
		published: bounded.New[recordID, int64](cfg.MaxRecords, nil),
		subs:      map[int]func([]uint64){},
	}
	secret := []byte(cfg.Secret)
	k.macs.New = func() any { return hmac.New(sha256.New, secret) }
	m := set.MeterProvider.Meter(metadata.ScopeName)
	var errs []error
	add := func(c metric.Int64Counter, err error) metric.Int64Counter {
		errs = append(errs, err)
		return c
	}
	k.publishedN = add(m.Int64Counter("otelcol_orphan_keys_records_published",
		metric.WithDescription("Key records this collector published to the key topic."), metric.WithUnit("{record}")))
	k.received = add(m.Int64Counter("otelcol_orphan_keys_records_received",
		metric.WithDescription("Key records read from the key topic (every member's, this one's included)."), metric.WithUnit("{record}")))
	k.invalid = add(m.Int64Counter("otelcol_orphan_keys_records_invalid",
		metric.WithDescription("Records of the key topic that are not version 2 key records (another version or writer): skipped."), metric.WithUnit("{record}")))
	k.publishErrs = add(m.Int64Counter("otelcol_orphan_keys_publish_errors",
		metric.WithDescription("Key records that could not be published (broker error, full client buffer, or still buffered at shutdown)."), metric.WithUnit("{record}")))
	k.evicted = add(m.Int64Counter("otelcol_orphan_keys_records_evicted",
		metric.WithDescription("Key records forgotten to stay within max_records (oldest first)."), metric.WithUnit("{record}")))
	records, err := m.Int64ObservableGauge("otelcol_orphan_keys_records",
		metric.WithDescription("Key records held from the key topic."), metric.WithUnit("{record}"))
	errs = append(errs, err)
	if err == nil {
		k.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			o.ObserveInt64(records, int64(k.table.len()), metric.WithAttributeSet(attribute.NewSet(attribute.String("extension", id.String()))))
			return nil
		}, records)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("orphan_keys: telemetry: %w", err)
	}
	return k, nil
}

// Start connects, creates or checks the key topic, and starts reading it from its start. A
// topic that is not compacted, or missing with topic.create off, fails start-up; brokers that
// do not answer within topic.check_timeout do not: the check goes on in the background, and
// what it finds wrong then is reported as a fatal error.
func (k *keys) Start(ctx context.Context, host component.Host) error {
	opts, err := clientOpts(ctx, k.cfg.ClientConfig, k.logger)
	if err != nil {
		return fmt.Errorf("orphan_keys: %w", err)
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.DefaultProduceTopic(k.cfg.Topic.Name),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(10_000),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ConsumeTopics(k.cfg.Topic.Name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(time.Second), // a topic created after Start is found soon
	)...)
	if err != nil {
		return fmt.Errorf("orphan_keys: %w", err)
	}
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, k.cfg.Topic.CheckTimeout)
	err = k.ensureTopic(cctx, adm)
	cancel()
	var te topicError
	if errors.As(err, &te) {
		cl.Close()
		return fmt.Errorf("orphan_keys: %w", err)
	}
	k.client.Store(cl)
	rctx, rcancel := context.WithCancel(context.Background())
	k.cancel = rcancel
	if err != nil {
		k.logger.Warn("orphan_keys: could not create or check the key topic at start; retrying in the background",
			zap.String("topic", k.cfg.Topic.Name), zap.Error(err))
		k.wg.Add(1)
		go k.retryTopic(rctx, adm, host)
	}
	k.wg.Add(1)
	go k.read(rctx, cl)
	return nil
}

// retryTopic creates or checks the topic until it succeeds; a topicError then is fatal.
func (k *keys) retryTopic(ctx context.Context, adm *kadm.Client, host component.Host) {
	defer k.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
		cctx, cancel := context.WithTimeout(ctx, k.cfg.Topic.CheckTimeout)
		err := k.ensureTopic(cctx, adm)
		cancel()
		var te topicError
		switch {
		case err == nil:
			k.logger.Info("orphan_keys: the key topic is ready", zap.String("topic", k.cfg.Topic.Name))
			return
		case errors.As(err, &te):
			k.logger.Error("orphan_keys: the key topic cannot be used", zap.Error(err))
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(fmt.Errorf("orphan_keys: %w", err)))
			return
		case ctx.Err() != nil:
			return
		default:
			k.logger.Debug("orphan_keys: the key topic is not ready", zap.String("topic", k.cfg.Topic.Name), zap.Error(err))
		}
	}
}

// Shutdown stops reading and flushes what is being published (bounded by ctx and 5 s).
func (k *keys) Shutdown(ctx context.Context) error {
	var err error
	if k.cancel != nil {
		k.cancel()
		k.wg.Wait()
		cl := k.client.Swap(nil)
		// What cannot be flushed in time (brokers down, a refused login) is dropped and counted
		// as publish errors by Close: a member that restarts publishes its keys again as it
		// sees them; it is not a shutdown error.
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if ferr := cl.Flush(fctx); ferr != nil {
			k.logger.Warn("orphan_keys: key records not published at shutdown", zap.Int64("records", cl.BufferedProduceRecords()), zap.Error(ferr))
		}
		cancel()
		cl.Close()
	}
	if k.reg != nil {
		err = errors.Join(err, k.reg.Unregister())
	}
	return err
}

// read applies every record of the topic to the table and tells the subscribers.
func (k *keys) read(ctx context.Context, cl *kgo.Client) {
	defer k.wg.Done()
	var hashes []uint64
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		failed := false
		fs.EachError(func(t string, p int32, err error) {
			failed = true
			k.logger.Debug("orphan_keys: fetch error", zap.String("topic", t), zap.Int32("partition", p), zap.Error(err))
		})
		hashes = hashes[:0]
		var bad, ev int64
		fs.EachRecord(func(r *kgo.Record) {
			h, ref, ok := decodeRecord(r.Key, r.Value)
			if !ok {
				bad++
				return
			}
			hashes = append(hashes, h)
			ev += int64(k.table.put(h, ref))
		})
		if bad > 0 {
			k.invalid.Add(ctx, bad, k.attrs)
		}
		if ev > 0 {
			k.evicted.Add(ctx, ev, k.attrs)
		}
		if len(hashes) == 0 {
			if failed {
				// Brokers down or the topic missing: do not spin on errors.
				select {
				case <-ctx.Done():
					return
				case <-time.After(250 * time.Millisecond):
				}
			}
			continue
		}
		k.received.Add(ctx, int64(len(hashes)), k.attrs)
		k.subMu.Lock()
		for _, fn := range k.subs {
			fn(hashes)
		}
		k.subMu.Unlock()
	}
}

// Hash implements keyshare.Keys.
func (k *keys) Hash(key string) uint64 {
	m := k.macs.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(key))
	var sum [sha256.Size]byte
	h := binary.BigEndian.Uint64(m.Sum(sum[:0]))
	k.macs.Put(m)
	if h == 0 {
		return 1
	}
	return h
}

// Lookup implements keyshare.Keys.
func (k *keys) Lookup(h uint64, linked []verdict.TraceID) (verdict.RootRef, bool) {
	return k.table.lookup(h, linked)
}

// Publish implements keyshare.Keys.
func (k *keys) Publish(h uint64, ref verdict.RootRef) {
	cl := k.client.Load()
	if cl == nil {
		return
	}
	id := recordID{h, ref.Trace}
	k.pubMu.Lock()
	if g, ok := k.published.Get(id); ok && g == ref.Gone {
		k.pubMu.Unlock()
		return
	}
	k.published.Put(id, ref.Gone) // a new record evicts the oldest at max_records
	k.pubMu.Unlock()
	key, val := encodeRecord(h, ref)
	ctx := context.Background()
	cl.TryProduce(ctx, &kgo.Record{Key: key, Value: val}, func(_ *kgo.Record, err error) {
		if err != nil {
			k.publishErrs.Add(ctx, 1, k.attrs)
			k.logger.Debug("orphan_keys: publish failed", zap.Error(err))
			k.pubMu.Lock()
			k.published.Delete(id) // published again when the key is seen again
			k.pubMu.Unlock()
			return
		}
		k.publishedN.Add(ctx, 1, k.attrs)
	})
}

// Subscribe implements keyshare.Keys.
func (k *keys) Subscribe(fn func([]uint64)) func() {
	k.subMu.Lock()
	defer k.subMu.Unlock()
	id := k.nextSub
	k.nextSub++
	k.subs[id] = fn
	return func() {
		k.subMu.Lock()
		delete(k.subs, id)
		k.subMu.Unlock()
	}
}

// Wait implements keyshare.Keys.
func (k *keys) Wait() time.Duration { return k.cfg.Wait }

// MaxWaiting implements keyshare.Keys.
func (k *keys) MaxWaiting() int { return k.cfg.MaxWaiting }

// MaxRecords implements keyshare.Keys.
func (k *keys) MaxRecords() int { return k.cfg.MaxRecords }
