package verdict

import (
	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
	"github.com/orphanwatch/orphanwatch/internal/verdict/rules"
	"github.com/orphanwatch/orphanwatch/internal/verdict/state"
)

// The data the core reads and writes lives in package record (internal/verdict/record), below
// the rules and the time model; these aliases keep it verdict's API, so that readers and
// components import verdict alone. Each name's documentation is record's.

type (
	// Price is the price of a model's tokens: [record.Price].
	Price = record.Price
	// Config is the correlator's settings: [record.Config].
	Config = record.Config
	// TraceID is a 16-byte W3C trace ID: [record.TraceID].
	TraceID = record.TraceID
	// SpanID is an 8-byte W3C span ID: [record.SpanID].
	SpanID = record.SpanID
	// Kind is a span kind: [record.Kind].
	Kind = record.Kind
	// Status is a span status code: [record.Status].
	Status = record.Status
	// Link is a span link: [record.Link].
	Link = record.Link
	// Span is what the correlator reads of one span: [record.Span].
	Span = record.Span
	// TargetHash is the FNV-1a hash of what a span calls: [record.TargetHash].
	TargetHash = record.TargetHash
	// Liveness is whether a span ended while somebody still waited for its root request: [record.Liveness].
	Liveness = record.Liveness
	// Outcome is how a run of attempts ended: [record.Outcome].
	Outcome = record.Outcome
	// EndReason is why a root request ended: [record.EndReason].
	EndReason = record.EndReason
	// Invalid is why a span is malformed: [record.Invalid].
	Invalid = record.Invalid
	// Verdict is what the correlator decided of one span: [record.Verdict].
	Verdict = record.Verdict
	// Stats is the correlator's counts: [record.Stats].
	Stats = record.Stats
	// Carried is a final verdict of a span that already left: [record.Carried].
	Carried = record.Carried
	// CarriedSpan is what a carried verdict keeps of its span: [record.CarriedSpan].
	CarriedSpan = record.CarriedSpan
	// Part says which part of a span's verdict is carried: [record.Part].
	Part = record.Part
)

// Attribute and event names the verdicts are written with (record's attributes.go).
const (
	AttrLiveness         = record.AttrLiveness
	AttrStartedAfterGone = record.AttrStartedAfterGone
	AttrAfterGone        = record.AttrAfterGone
	AttrDetached         = record.AttrDetached
	AttrAttempt          = record.AttrAttempt
	AttrRunOutcome       = record.AttrRunOutcome
	AttrRunAttempts      = record.AttrRunAttempts
	AttrRunResult        = record.AttrRunResult
	AttrRootEndReason    = record.AttrRootEndReason
	AttrCallerService    = record.AttrCallerService
	AttrSpendModel       = record.AttrSpendModel
	AttrSpendInput       = record.AttrSpendInput
	AttrSpendOutput      = record.AttrSpendOutput
	AttrSpendCost        = record.AttrSpendCost
	AttrSpendRepeated    = record.AttrSpendRepeated
	AttrSpendNested      = record.AttrSpendNested
	AttrCancelReachHops  = record.AttrCancelReachHops
	AttrOrphanedDepth    = record.AttrOrphanedDepth
	AttrDeferred         = record.AttrDeferred
	EventVerdict         = record.EventVerdict
	AttrEventTraceID     = record.AttrEventTraceID
	AttrEventSpanID      = record.AttrEventSpanID
	AttrEventSpanName    = record.AttrEventSpanName
	AttrEventSpanKind    = record.AttrEventSpanKind
	AttrEventStart       = record.AttrEventStart
	CarrierSpanName      = record.CarrierSpanName
	AttrCarrier          = record.AttrCarrier
)

// Parts of a verdict carried (record's Part values).
const (
	PartAll  = record.PartAll
	PartRun  = record.PartRun
	PartEdge = record.PartEdge
)

// Span kinds (record's Kind values).
const (
	KindUnspecified = record.KindUnspecified
	KindInternal    = record.KindInternal
	KindServer      = record.KindServer
	KindClient      = record.KindClient
	KindProducer    = record.KindProducer
	KindConsumer    = record.KindConsumer
)

// Span status codes (record's Status values).
const (
	StatusUnset = record.StatusUnset
	StatusOK    = record.StatusOK
	StatusError = record.StatusError
)

// Liveness values (record's; LivenessNone: nothing is written).
const (
	LivenessNone     = record.LivenessNone
	LivenessLive     = record.LivenessLive
	LivenessOrphaned = record.LivenessOrphaned
	LivenessUnknown  = record.LivenessUnknown
)

// Run outcomes (record's; OutcomeNone marks spans that do not close a run).
const (
	OutcomeNone              = record.OutcomeNone
	OutcomeSuccess           = record.OutcomeSuccess
	OutcomeRetryableFailure  = record.OutcomeRetryableFailure
	OutcomeHardFailure       = record.OutcomeHardFailure
	OutcomeCancelled         = record.OutcomeCancelled
	OutcomeDeliveredToNobody = record.OutcomeDeliveredToNobody
	OutcomeUnknownRoot       = record.OutcomeUnknownRoot
)

// End reasons (record's; EndReasonNone for spans that are not roots).
const (
	EndReasonNone             = record.EndReasonNone
	EndReasonCompleted        = record.EndReasonCompleted
	EndReasonCancelled        = record.EndReasonCancelled
	EndReasonDeadlineExceeded = record.EndReasonDeadlineExceeded
	EndReasonError            = record.EndReasonError
	EndReasonDetached         = record.EndReasonDetached
)

// Validity of a span (record's Invalid values; NumInvalid counts them).
const (
	Valid                 = record.Valid
	InvalidTraceID        = record.InvalidTraceID
	InvalidSpanID         = record.InvalidSpanID
	InvalidTimes          = record.InvalidTimes
	InvalidEndBeforeStart = record.InvalidEndBeforeStart
	InvalidDuplicate      = record.InvalidDuplicate
	InvalidParentCycle    = record.InvalidParentCycle
	InvalidEndInFuture    = record.InvalidEndInFuture
	InvalidTooLong        = record.InvalidTooLong
	NumInvalid            = record.NumInvalid
)

// OperationAttributes are the attributes that name a span's operation: [record.OperationAttributes].
var OperationAttributes = record.OperationAttributes

// UsageAttributes are the GenAI token usage attributes: [record.UsageAttributes].
var UsageAttributes = record.UsageAttributes

// DefaultConfig returns the default settings: [record.DefaultConfig].
func DefaultConfig() Config { return record.DefaultConfig() }

// NewTargetHash returns the hash of the empty text, to Add parts to: [record.NewTargetHash].
func NewTargetHash() TargetHash { return record.NewTargetHash() }

// InvalidReasons lists every reason other than Valid, for telemetry set-up:
// [record.InvalidReasons].
func InvalidReasons() []Invalid { return record.InvalidReasons() }

// HeldAbandonedRoot reports whether a span whose verdict is v is an abandoned root the
// processor holds a while: [rules.HeldAbandonedRoot].
func HeldAbandonedRoot(v *Verdict, parentless bool) bool {
	return rules.HeldAbandonedRoot(v, parentless)
}

// MaxPrefixPricedReported bounds the model names told to Config.PrefixPriced:
// [rules.MaxPrefixPricedReported].
const MaxPrefixPricedReported = rules.MaxPrefixPricedReported

// Key sharing across a tier (internal/verdict/state's keydir.go).
type (
	// RootRef is what a key directory holds of a root request: [state.RootRef].
	RootRef = state.RootRef
	// KeyDirectory shares idempotency-key bindings beyond one Correlator:
	// [state.KeyDirectory].
	KeyDirectory = state.KeyDirectory
	// Binding says where a key hash binds: [state.Binding].
	Binding = state.Binding
)

// Where a key binds: nowhere (yet), in the Correlator's own index, or through the directory
// ([state.Binding]).
const (
	BindingNone   = state.BindingNone
	BindingLocal  = state.BindingLocal
	BindingRemote = state.BindingRemote
)
