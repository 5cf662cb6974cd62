module github.com/orphanwatch/orphanwatch/test/scaleout

go 1.26.7

replace github.com/orphanwatch/orphanwatch => ../..

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/orphanwatch/orphanwatch v0.0.0-00010101000000-000000000000 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go v1.22.2 // indirect
	github.com/twmb/franz-go/pkg/kfake v0.0.0-20260421215025-4e7a1e1569ac // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
)
