// Command kfakebroker runs kfake, a Kafka wire-protocol broker for tests, on 127.0.0.1 with the
// topics a local orphanwatch tier needs (README "Scale"). It keeps everything in memory: for
// trying the tier on one machine, never for production.
//
//	go run ./cmd/kfakebroker -port 9092 -partitions 12
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 9092, "port on 127.0.0.1")
	partitions := flag.Int("partitions", 12, "partitions of the spans topic")
	topic := flag.String("topic", "otlp_spans", "the spans topic the front tier writes")
	flag.Parse()
	c, err := kfake.NewCluster(
		kfake.Ports(*port),
		kfake.SeedTopics(int32(*partitions), *topic),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(1),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Printf("kfake broker on %v: topic %s with %d partitions (Ctrl-C stops it)\n", c.ListenAddrs(), *topic, *partitions)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
