package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics/labellimit"
)

// The recorder keeps the series handles it has used, per service, per operation and model of
// a service, and per fixed label value, so that a span costs a few map look-ups and atomic adds
// instead of a label look-up (hashing every label value) per metric. A handle is made with
// WithLabelValues on first use, so series appear exactly when they did without the cache.

// maxCached bounds each map of the cache (services, and operations and models per service):
// when one is full it is emptied and refilled as spans come. Label values stay bounded by the
// limiter; this only bounds the memory of keys that map to the same values.
const maxCached = 4096

// exemplarInterval is how often at most a series' exemplar is replaced. Prometheus keeps one
// exemplar per series (per bucket of a histogram) and a scrape reads the latest: replacing it
// on every orphaned span would cost an allocation each (client_golang builds the exemplar)
// for exemplars nobody reads.
const exemplarInterval = time.Second

// exemplarDue reports whether a series whose exemplar was last replaced at *last (unix
// nanoseconds, 0: never) takes a new one at now, and claims it.
func exemplarDue(last *atomic.Int64, now int64) bool {
	l := last.Load()
	return (l == 0 || now-l >= int64(exemplarInterval)) && last.CompareAndSwap(l, now)
}

// counterSlot is a cached counter with its exemplar interface.
type counterSlot struct {
	c          prometheus.Counter
	ea         prometheus.ExemplarAdder
	exemplarAt atomic.Int64
}

// counterCache holds the counters of one label tuple, indexed by a fixed label value.
type counterCache []atomic.Pointer[counterSlot]

// get returns counter i, made by mk on first use (WithLabelValues returns the same child to
// callers that race).
func (cc counterCache) get(i int, mk func() prometheus.Counter) *counterSlot {
	if s := cc[i].Load(); s != nil {
		return s
	}
	c := mk()
	s := &counterSlot{c: c}
	s.ea, _ = c.(prometheus.ExemplarAdder)
	cc[i].Store(s)
	return s
}

// observerSlot is a cached histogram with its exemplar interface.
type observerSlot struct {
	o          prometheus.Observer
	eo         prometheus.ExemplarObserver
	exemplarAt atomic.Int64
}

type observerCache struct{ p atomic.Pointer[observerSlot] }

func (oc *observerCache) get(mk func() prometheus.Observer) *observerSlot {
	if s := oc.p.Load(); s != nil {
		return s
	}
	o := mk()
	s := &observerSlot{o: o}
	s.eo, _ = o.(prometheus.ExemplarObserver)
	oc.p.Store(s)
	return s
}

// labelSlot is a label value from span data as the limiter admitted it: the value itself, or
// "other" (over), decided once.
type labelSlot struct {
	once  sync.Once
	value string
	over  bool
}

// use resolves the slot on first use and counts one overflow for every use of an "other"
// value, as the limiter counts every occurrence it replaces.
func (l *labelSlot) use(r *Recorder, label, raw string) {
	l.once.Do(func() { l.value, l.over = r.limiter.Admit(label, raw) })
	if l.over {
		r.overflows[label].Inc()
	}
}

// serviceSeries is the cache of one service.name.
type serviceSeries struct {
	name  string
	label labelSlot
	dims  []dimSlot // with dimensions: this cache's values (dimensions.go)

	roots        counterCache // by end reason
	spendSeconds counterCache // by liveness
	outlive      observerCache
	reach, depth observerCache

	// ops and models are read on every span that feeds them: copy-on-write maps, read without
	// a lock. Only admitted label values are cached (a flood of new names beyond the label
	// limit would otherwise copy a full map per span): the others share one "other" entry.
	ops        cowMap[opKey, opSeries]
	models     cowMap[string, modelSeries]
	otherOp    atomic.Pointer[opSeries]
	otherModel atomic.Pointer[modelSeries]
	mu         sync.RWMutex
	edges      map[string]*edgeSeries // by caller service, this service the callee
}

// cowMap is a copy-on-write map: lookups load it atomically, inserts copy it under mu.
type cowMap[K comparable, V any] struct {
	mu sync.Mutex
	p  atomic.Pointer[map[K]*V]
}

func (c *cowMap[K, V]) load(k K) *V {
	if m := c.p.Load(); m != nil {
		return (*m)[k]
	}
	return nil
}

// insert adds v under k unless k is there already, and returns what k holds. A map that
// reached maxCached starts again empty.
func (c *cowMap[K, V]) insert(k K, v *V) *V {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n map[K]*V
	if old := c.p.Load(); old != nil {
		if e := (*old)[k]; e != nil {
			return e
		}
		if len(*old) < maxCached {
			n = make(map[K]*V, len(*old)+1)
			for ok, ov := range *old {
				n[ok] = ov
			}
		}
	}
	if n == nil {
		n = map[K]*V{}
	}
	n[k] = v
	c.p.Store(&n)
	return v
}

// preset resolves a label slot that is made already resolved.
func (l *labelSlot) preset(value string, over bool) {
	l.once.Do(func() { l.value, l.over = value, over })
}

// edgeSeries is the cache of one caller of a service (unpropagated_total).
type edgeSeries struct {
	name           string // the caller
	caller, callee labelSlot
	count          counterCache // one counter
}

// opSeries is the cache of one operation of a service.
type opSeries struct {
	name     string
	label    labelSlot
	runs     counterCache // by outcome
	attempts counterCache // by attempt label
}

// modelSeries is the cache of one model of a service.
type modelSeries struct {
	name   string
	label  labelSlot
	calls  counterCache // by liveness
	tokens counterCache // by direction * numLiveness + liveness
	cost   counterCache // by liveness
}

// cached returns m[k]; on first use it makes the entry with mk (which also returns the key to
// keep: its strings copied out of the batch) under mu's write lock. A map that reached
// maxCached is emptied first.
func cached[K comparable, V any](mu *sync.RWMutex, m *map[K]*V, k K, mk func(K) (K, *V)) *V {
	mu.RLock()
	v := (*m)[k]
	mu.RUnlock()
	if v != nil {
		return v
	}
	mu.Lock()
	defer mu.Unlock()
	if v = (*m)[k]; v != nil {
		return v
	}
	if len(*m) >= maxCached {
		*m = map[K]*V{}
	}
	k, v = mk(k)
	(*m)[k] = v
	return v
}

// service returns the cache of the (sanitized) service name.
func (r *Recorder) service(name string) *serviceSeries {
	return cached(&r.svcMu, &r.services, name, func(name string) (string, *serviceSeries) {
		name = strings.Clone(name)
		return name, newServiceSeries(name)
	})
}

func newServiceSeries(name string) *serviceSeries {
	return &serviceSeries{
		name:         name,
		roots:        make(counterCache, len(endReasonNames)),
		spendSeconds: make(counterCache, numLiveness),
		edges:        map[string]*edgeSeries{},
	}
}

// operation returns the cache of an operation, its label admitted by the limiter when it is
// made; operations beyond the label's limit share the service's "other" entry.
func (s *serviceSeries) operation(r *Recorder, k opKey) *opSeries {
	if o := s.ops.load(k); o != nil {
		return o
	}
	name := k.label()
	value, over := r.limiter.Admit(labelOperation, name)
	if over {
		return sharedOther(&s.otherOp, func() *opSeries { return newOpSeries(labellimit.Overflow) })
	}
	o := newOpSeries(value)
	o.label.preset(value, false)
	k.a, k.b = strings.Clone(k.a), strings.Clone(k.b)
	return s.ops.insert(k, o)
}

func newOpSeries(name string) *opSeries {
	o := &opSeries{
		name:     name,
		runs:     make(counterCache, len(outcomeNames)),
		attempts: make(counterCache, numAttemptLabels),
	}
	if name == labellimit.Overflow {
		o.label.preset(name, true)
	}
	return o
}

// sharedOther returns *p, made by mk on first use.
func sharedOther[V any](p *atomic.Pointer[V], mk func() *V) *V {
	if v := p.Load(); v != nil {
		return v
	}
	p.CompareAndSwap(nil, mk())
	return p.Load()
}

// model returns the cache of a model, by the name as the span carries it (its label value is
// the name sanitized, made once).
func (s *serviceSeries) model(r *Recorder, raw string) *modelSeries {
	if m := s.models.load(raw); m != nil {
		return m
	}
	value, over := r.limiter.Admit(labelModel, sanitize(raw))
	if over {
		return sharedOther(&s.otherModel, func() *modelSeries { return newModelSeries(labellimit.Overflow) })
	}
	m := newModelSeries(strings.Clone(value))
	m.label.preset(m.name, false)
	return s.models.insert(strings.Clone(raw), m)
}

func newModelSeries(name string) *modelSeries {
	m := &modelSeries{
		name:   name,
		calls:  make(counterCache, numLiveness),
		tokens: make(counterCache, 2*numLiveness),
		cost:   make(counterCache, numLiveness),
	}
	if name == labellimit.Overflow {
		m.label.preset(name, true)
	}
	return m
}

func (s *serviceSeries) edge(caller string) *edgeSeries {
	return cached(&s.mu, &s.edges, caller, func(caller string) (string, *edgeSeries) {
		caller = strings.Clone(caller)
		return caller, &edgeSeries{name: caller, count: make(counterCache, 1)}
	})
}

// The operation label follows the OpenTelemetry semantic conventions' span-name rules, so that
// an HTTP CLIENT span named only "GET" does not put every target into one series:
//
//   - GenAI (gen_ai.operation.name): "execute_tool {gen_ai.tool.name}",
//     "invoke_agent {gen_ai.agent.name}" (and create_agent), else "{operation} {model}", the model
//     from gen_ai.request.model, else gen_ai.response.model;
//   - gRPC (rpc.system = grpc): "{rpc.service}/{rpc.method}";
//   - messaging (messaging.operation.name, else .type): "{operation} {destination}";
//   - HTTP (http.request.method, older http.method): "{method} {url.template}", on SERVER spans
//     "{method} {http.route}", else on other spans "{method} {host[:port]}" with the target
//     host from server.address/server.port (older net.peer.name/net.peer.port, else the host
//     of url.full/http.url), the port only when it is not the scheme's default;
//   - otherwise, or when those attributes are missing, the span name.

// opKind says how an opKey's parts make the label.
type opKind uint8

const (
	opName     opKind = iota // a: the span name
	opJoin                   // "a b", or "a" when b is empty
	opSlash                  // "a/b"
	opHostPort               // "a b" or "a b:port"
)

// opKey identifies an operation by the strings it is made of, without building it.
type opKey struct {
	kind opKind
	a, b string
	port int64
}

func (k opKey) label() string {
	var s string
	switch k.kind {
	case opName:
		s = k.a
	case opJoin:
		s = k.a
		if k.b != "" {
			s += " " + k.b
		}
	case opSlash:
		s = k.a + "/" + k.b
	case opHostPort:
		host := k.b
		if k.port != 0 {
			if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") { // IPv6
				host = "[" + host + "]"
			}
			host += ":" + strconv.FormatInt(k.port, 10)
		}
		s = k.a + " " + host
	}
	if s = sanitize(s); s == "" {
		s = unknownOperation
	}
	return strings.Clone(s)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// OperationOf returns the `operation` label the exporter gives span's series, before label
// limits: the GenAI operation and its tool, agent or model; `service/method` for gRPC; the
// messaging operation and destination; for HTTP the method with url.template, the route (SERVER)
// or the host[:port] called (CLIENT); else the span name. `orphanwatch analyze` names runs with
// it, so its tables read like the metrics.
func OperationOf(span ptrace.Span) string {
	var v spanView
	v.read(span.Attributes())
	return operationKeyOf(span, &v).label()
}

// operationKeyOf names the span's operation (see above).
func operationKeyOf(span ptrace.Span, v *spanView) opKey {
	name := opKey{a: span.Name()}
	if op := v.strOK(kGenAIOperation); op != "" {
		switch op {
		case "execute_tool":
			return opKey{kind: opJoin, a: op, b: v.strOK(kGenAIToolName)}
		case "invoke_agent", "create_agent":
			return opKey{kind: opJoin, a: op, b: v.strOK(kGenAIAgentName)}
		}
		return opKey{kind: opJoin, a: op, b: firstOf(v.strOK(kGenAIRequestModel), v.strOK(kGenAIResponseModel))}
	}
	if v.strOK(kRPCSystem) == "grpc" {
		if svc, m := v.strOK(kRPCService), v.strOK(kRPCMethod); svc != "" && m != "" {
			return opKey{kind: opSlash, a: svc, b: m}
		}
		return name
	}
	if op := firstOf(v.strOK(kMsgOperationName), v.strOK(kMsgOperationType)); op != "" {
		return opKey{kind: opJoin, a: op, b: v.strOK(kMsgDestination)}
	}
	method := firstOf(v.strOK(kHTTPMethod), v.strOK(kHTTPMethodOld))
	if method == "" {
		return name
	}
	if t := v.strOK(kURLTemplate); t != "" {
		return opKey{kind: opJoin, a: method, b: t}
	}
	if span.Kind() == ptrace.SpanKindServer {
		if route := v.strOK(kHTTPRoute); route != "" {
			return opKey{kind: opJoin, a: method, b: route}
		}
		return name
	}
	if host, port := httpTarget(v); host != "" {
		return opKey{kind: opHostPort, a: method, b: host, port: port}
	}
	return name
}

// httpTarget returns the host an HTTP client span called and its port, 0 when absent or the
// default of the scheme.
func httpTarget(v *spanView) (string, int64) {
	host, port := v.strOK(kServerAddress), int64(0)
	if host != "" {
		port, _ = v.integer(kServerPort)
	} else if host = v.strOK(kNetPeerName); host != "" {
		port, _ = v.integer(kNetPeerPort)
	} else {
		host, port = urlHost(firstOf(v.strOK(kURLFull), v.strOK(kHTTPURL)))
	}
	if port != 80 && port != 443 {
		if port < 0 || port > 65535 {
			port = 0
		}
		return host, port
	}
	// 80 and 443 are left out when they are the scheme's default, or when the scheme is unknown.
	scheme := v.strOK(kURLScheme)
	if scheme == "" {
		u := firstOf(v.strOK(kURLFull), v.strOK(kHTTPURL))
		if i := strings.Index(u, "://"); i > 0 {
			scheme = u[:i]
		}
	}
	if (port == 80 && !strings.EqualFold(scheme, "https")) || (port == 443 && !strings.EqualFold(scheme, "http")) {
		port = 0
	}
	return host, port
}

// urlHost returns the host and port of an absolute URL, without allocating.
func urlHost(u string) (string, int64) {
	i := strings.Index(u, "://")
	if i < 0 {
		return "", 0
	}
	auth := u[i+3:]
	if j := strings.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	if j := strings.LastIndexByte(auth, '@'); j >= 0 {
		auth = auth[j+1:]
	}
	host, portStr := auth, ""
	if strings.HasPrefix(auth, "[") { // [IPv6]:port
		if j := strings.IndexByte(auth, ']'); j > 0 {
			host, portStr = auth[1:j], strings.TrimPrefix(auth[j+1:], ":")
		}
	} else if j := strings.LastIndexByte(auth, ':'); j >= 0 {
		host, portStr = auth[:j], auth[j+1:]
	}
	port, err := strconv.ParseInt(portStr, 10, 64)
	if err != nil {
		port = 0
	}
	return host, port
}
