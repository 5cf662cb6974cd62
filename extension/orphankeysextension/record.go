package orphankeysextension

import (
	"encoding/binary"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Record format, version 2 (README "Records"):
//
//	key   = keyed hash (8 bytes, big endian) | trace ID (16 bytes)
//	value = version (1 byte, 2) | gone time (unix ns, 8 bytes big endian) | end reason (1 byte)
//	        | detached (1 byte, always 0: only roots that are not detached work are published)
//	        | root span ID (8 bytes) | service name length (1 byte) | service name (at most 255 bytes)
//
// The trace ID is part of the Kafka key, so that compaction keeps one record per key and
// request: two requests that sent the same key keep a record each. Version 1 records (key = the
// hash alone, no trace or root) are not decoded: they are counted as invalid and skipped.
const (
	recordVersion = 2
	recordKeyLen  = 8 + 16
	recordHeadLen = 1 + 8 + 1 + 1 + 8 + 1
)

func encodeRecord(h uint64, ref verdict.RootRef) (key, val []byte) {
	key = make([]byte, 0, recordKeyLen)
	key = binary.BigEndian.AppendUint64(key, h)
	key = append(key, ref.Trace[:]...)
	svc := ref.Service
	if len(svc) > 255 {
		svc = svc[:255]
	}
	val = make([]byte, 0, recordHeadLen+len(svc))
	val = append(val, recordVersion)
	val = binary.BigEndian.AppendUint64(val, uint64(ref.Gone))
	val = append(val, byte(ref.Reason), 0)
	val = append(val, ref.Root[:]...)
	val = append(val, byte(len(svc)))
	val = append(val, svc...)
	return key, val
}

// decodeRecord returns the hash and root of a record, false for anything that is not a
// well-formed version 2 record of a root that is not detached.
func decodeRecord(key, val []byte) (uint64, verdict.RootRef, bool) {
	if len(key) != recordKeyLen || len(val) < recordHeadLen || val[0] != recordVersion || val[10] != 0 ||
		len(val) != recordHeadLen+int(val[recordHeadLen-1]) {
		return 0, verdict.RootRef{}, false
	}
	h := binary.BigEndian.Uint64(key)
	if h == 0 {
		return 0, verdict.RootRef{}, false
	}
	ref := verdict.RootRef{
		Gone:    int64(binary.BigEndian.Uint64(val[1:9])),
		Reason:  verdict.EndReason(val[9]),
		Service: string(val[recordHeadLen:]),
	}
	copy(ref.Trace[:], key[8:])
	copy(ref.Root[:], val[11:19])
	if ref.Trace.IsZero() {
		return 0, verdict.RootRef{}, false
	}
	return h, ref, true
}
