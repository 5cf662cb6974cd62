// Command gendashboards writes orphanwatch's Grafana dashboards (package dashboards, built with
// the Grafana foundation SDK) as JSON files. Run it from the repository root after changing a
// dashboard:
//
//	go run ./cmd/gendashboards            # writes dashboards/*.json
//	go run ./cmd/gendashboards -out DIR   # writes them elsewhere
//
// The dashboards package's tests fail while the committed files differ from its output.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/orphanwatch/orphanwatch/dashboards"
)

func main() {
	out := flag.String("out", "dashboards", "folder to write the dashboards into")
	flag.Parse()
	if err := dashboards.WriteAll(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gendashboards:", err)
		os.Exit(1)
	}
	for _, f := range dashboards.Files() {
		fmt.Println(*out + "/" + f.Name)
	}
}
