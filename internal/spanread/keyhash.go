package spanread

// SetKeyHash makes the reader hash idempotency keys with f instead of HashKey (FNV-1a): the
// processor sets a keyed hash (HMAC-SHA256 under a secret) when key hashes leave the process
// (key sharing across a tier). f must never return 0. Call it before the reader is used.
func (r *Reader) SetKeyHash(f func(key string) uint64) { r.keyHash = f }

// hashKey hashes an idempotency key with the reader's key hash.
func (r *Reader) hashKey(k string) uint64 {
	if r.keyHash != nil {
		return r.keyHash(k)
	}
	return HashKey(k)
}

// KeyHashOf returns the hash the reader gives idempotency key k.
func (r *Reader) KeyHashOf(k string) uint64 { return r.hashKey(k) }
