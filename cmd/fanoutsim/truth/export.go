package truth

import "fmt"

// Export is what became of the spans the simulator ended, between its TracerProviders and the
// collector. The truth describes every span that ended; the collector can only judge the spans
// it received, so its metrics equal the truth only when Lost is 0. A comparison of the
// collector's metrics with a truth whose Lost is not 0 is not a verdict mismatch: it must be
// reported as spans lost before the collector.
//
// Spans are lost before the collector when the SDK's BatchSpanProcessor drops them (its queue
// full, or the provider shut down before they were exported: Dropped), when an export call
// fails after the OTLP exporter's own retries (Failed), or when the receiver accepts a request
// but rejects some of its spans (an OTLP partial success: Rejected).
type Export struct {
	// Ended counts the spans that ended (and were sampled: the simulator samples every span).
	Ended int `json:"spans_ended"`
	// Exported counts the spans in export calls that succeeded.
	Exported int `json:"spans_exported"`
	// Failed counts the spans in export calls that returned an error.
	Failed int `json:"spans_failed"`
	// Dropped counts ended spans never handed to the exporter: Ended - Exported - Failed.
	Dropped int `json:"spans_dropped"`
	// Rejected counts spans the receiver rejected in an export call that it otherwise accepted
	// (an OTLP partial success, which the exporter returns as an error naming the count).
	Rejected int `json:"spans_rejected"`
	// Errors counts the export calls that returned an error (after the exporter's retries),
	// partial successes included.
	Errors int `json:"export_errors"`
}

// Lost is the number of ended spans that did not reach the collector: dropped, failed or
// rejected.
func (e Export) Lost() int { return e.Dropped + e.Failed + e.Rejected }

// Complete reports whether every ended span reached the collector and no export call failed:
// only then can the collector's metrics equal the truth.
func (e Export) Complete() bool { return e.Lost() == 0 && e.Errors == 0 }

// String is the summary line's text.
func (e Export) String() string {
	return fmt.Sprintf("ended=%d exported=%d dropped=%d failed=%d rejected=%d export_errors=%d",
		e.Ended, e.Exported, e.Dropped, e.Failed, e.Rejected, e.Errors)
}
