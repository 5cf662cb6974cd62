package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Dimensions (Settings.Dimensions, as contrib spanmetrics' dimensions): extra labels whose values
// come from a span's attributes, else its resource's, else the dimension's default (else "").
//
// The recorder keeps the series handles of a service (serviceSeries, series.go) per service
// name; with dimensions, per service name and dimension values, so that the series of a
// service carry the values of the span they count, and a span still costs a few map look-ups.
// The dimension values are resolved once per span: in annotate mode when it is recorded
// (Record), in observe mode when it arrives (observeSink.Keep), which keeps the service's
// cache with the span's record, not the span. A resource's values are read once per
// ResourceSpans. Without dimensions none of this runs: Record and Keep do what they did.
//
// A dimension's value is a label value from span data like any other: sanitized (valid UTF-8,
// trimmed, at most maxLabelValueBytes), admitted by label_limits under the dimension's label
// (later new values are "other", counted in label_overflow_total{label}), and part of the tuples
// series_limit bounds. An empty value (the attribute nowhere and no default) and the default
// take no room in label_limits: they do not come from span data.

// dimension is one configured dimension.
type dimension struct {
	key   string // the attribute key
	label string // the label name (DimensionLabel)
	def   string // the default value, sanitized; "" when none
}

// dimSlot is a service's value of one dimension, admitted by the limiter on first use.
type dimSlot struct {
	raw   string
	label labelSlot
}

// setDimensions reads cfg's dimensions (validated) into r.
func (r *Recorder) setDimensions(cfg *Settings) {
	r.limited = slices.Clone(LimitedLabels)
	for _, d := range cfg.Dimensions {
		label, _ := DimensionLabel(d.Name) // validated: a label name
		r.dims = append(r.dims, dimension{key: d.Name, label: label, def: sanitize(d.Default)})
		r.limited = append(r.limited, label)
	}
	if len(r.dims) > 0 {
		r.dimServices = map[string]*serviceSeries{}
		r.noAttrs = pcommon.NewMap()
	}
}

// dimLabels are the dimensions' label names, in configuration order.
func (r *Recorder) dimLabels() []string {
	labels := make([]string, len(r.dims))
	for i, d := range r.dims {
		labels[i] = d.label
	}
	return labels
}

// attrValue is the label value of an attribute value: a string sanitized, another type as
// pcommon writes it as a string (an int "42", a bool "true"), sanitized.
func attrValue(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return sanitize(v.Str())
	case pcommon.ValueTypeEmpty:
		return ""
	}
	return sanitize(v.AsString())
}

// resourceDims returns the dimension values a resource's attributes give ("" for each one they
// do not), read once for the spans of the resource, in dst's memory when it has room; nil
// without dimensions.
func (r *Recorder) resourceDims(dst []string, attrs pcommon.Map) []string {
	if len(r.dims) == 0 {
		return nil
	}
	vals := dst[:0]
	if cap(vals) < len(r.dims) {
		vals = make([]string, 0, len(r.dims))
	}
	for _, d := range r.dims {
		val := ""
		if v, ok := attrs.Get(d.key); ok {
			val = attrValue(v)
		}
		vals = append(vals, val)
	}
	return vals
}

// dimService returns the cache of the service name with the dimension values of a span whose
// attributes are attrs and whose resource gave res (resourceDims; nil: none): for each
// dimension, the span's attribute, else the resource's, else the default. r has dimensions.
func (r *Recorder) dimService(name string, res []string, attrs pcommon.Map) *serviceSeries {
	// The key is the name and the values, each after "\xff" (which valid UTF-8, as sanitized
	// names and values are, never holds), built on the stack: a look-up allocates nothing.
	var buf [192]byte
	key := append(buf[:0], name...)
	for i := range r.dims {
		d := &r.dims[i]
		val := ""
		if v, ok := attrs.Get(d.key); ok {
			val = attrValue(v)
		}
		if val == "" && res != nil {
			val = res[i]
		}
		if val == "" {
			val = d.def
		}
		key = append(key, 0xff)
		key = append(key, val...)
	}
	r.svcMu.RLock()
	s := r.dimServices[string(key)]
	r.svcMu.RUnlock()
	if s != nil {
		return s
	}
	return r.newDimService(string(key))
}

// newDimService makes (once) the cache of a key of dimService.
func (r *Recorder) newDimService(key string) *serviceSeries {
	r.svcMu.Lock()
	defer r.svcMu.Unlock()
	if s := r.dimServices[key]; s != nil {
		return s
	}
	if len(r.dimServices) >= maxCached {
		r.dimServices = map[string]*serviceSeries{}
	}
	parts := strings.Split(key, "\xff")
	s := newServiceSeries(parts[0])
	s.dims = make([]dimSlot, len(r.dims))
	for i := range r.dims {
		d := &s.dims[i]
		d.raw = parts[i+1]
		if d.raw == "" || d.raw == r.dims[i].def {
			d.label.preset(d.raw, false) // not from span data: no room in label_limits
		}
	}
	r.dimServices[key] = s
	return s
}

// useDims resolves the service's dimension values through the limiter (once each), counting an
// overflow for every use of an "other" value, as labelSlot.use does.
func (s *serviceSeries) useDims(r *Recorder) {
	for i := range s.dims {
		s.dims[i].label.use(r, r.dims[i].label, s.dims[i].raw)
	}
}

// lvs returns the label values of a series of the service: lvs, then the dimensions' values
// (resolved: useDims).
func (s *serviceSeries) lvs(lvs ...string) []string {
	for i := range s.dims {
		lvs = append(lvs, s.dims[i].label.value)
	}
	return lvs
}
