// Command orphanwatch gives orphanwatch's verdicts on trace files, with no collector and no
// servers: `orphanwatch analyze FILE...` reads OTLP JSON (also JSON lines from the collector's
// file exporter), Jaeger JSON (the UI's "Download JSON", or the query API's {"data": [...]}) and
// Zipkin JSON, converts them with the collector's own translators, runs the orphan processor
// in-process and prints, per trace, the root and its end reason, runs by outcome, the orphaned
// spans and what they cost, then a summary. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/analyze"
	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/input"
	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/render"
	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/settings"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit statuses.
const (
	exitOK       = 0
	exitInput    = 1 // an input could not be read (the others are still reported)
	exitUsage    = 2 // bad flags or settings
	exitOrphaned = 3 // --fail-on-orphaned and something was orphaned
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `orphanwatch: find work that kept running after its caller had gone, in trace files.

Usage:
  orphanwatch analyze [flags] FILE...    analyse trace files ("-" reads standard input)
  orphanwatch version                    print the version

Formats (detected from the content; gzip-compressed input is accepted):
  OTLP JSON               {"resourceSpans": [...]}, one document or JSON lines (file exporter)
  Jaeger JSON             a trace object {"traceID", "spans", "processes"} (UI "Download JSON"),
                          or a query API answer {"data": [trace, ...]}
  Zipkin JSON             a v2 span array [{"traceId", "id", ...}] (v1 arrays too)

Flags of analyze:
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		printDefaults(stderr)
		return exitUsage
	}
	switch args[0] {
	case "analyze", "analyse":
		return analyzeCmd(ctx, args[1:], stdin, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "orphanwatch", version)
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		printDefaults(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "orphanwatch: unknown command %q (want analyze or version)\n", args[0])
	return exitUsage
}

type flags struct {
	fs             *flag.FlagSet
	format         string
	metrics        bool
	prices         string
	config         string
	spans          bool
	failOnOrphaned bool
}

func newFlags(out io.Writer) *flags {
	f := &flags{fs: flag.NewFlagSet("analyze", flag.ContinueOnError)}
	f.fs.SetOutput(out)
	f.fs.StringVar(&f.format, "format", "text", "output `format`: text (tables) or json")
	f.fs.BoolVar(&f.metrics, "metrics", false, "print, instead of the report, the Prometheus text exposition the orphanmetrics exporter would serve for these spans")
	f.fs.StringVar(&f.prices, "prices", "", "price table `file` (YAML or JSON): model: {input_per_million: USD, output_per_million: USD};\nreplaces the default table (gpt-4o 2.50/10.00, gpt-4o-mini 0.15/0.60 USD per million input/output tokens)")
	f.fs.StringVar(&f.config, "config", "", "orphan processor settings `file` (YAML): the processor's own keys, or a collector configuration\nwhose processors.orphan (and exporters.orphanmetrics) sections are used, waits and limits included")
	f.fs.BoolVar(&f.spans, "spans", false, "also list every span with the verdict the processor wrote on it")
	f.fs.BoolVar(&f.failOnOrphaned, "fail-on-orphaned", false, "exit with status 3 when any span is orphaned (for CI)")
	return f
}

func printDefaults(w io.Writer) {
	f := newFlags(w)
	f.fs.PrintDefaults()
	fmt.Fprint(w, `
Exit status: 0 done; 1 an input could not be read (the others are still reported);
2 bad flags or settings; 3 --fail-on-orphaned and a span was orphaned.
`)
}

// parse parses flags that may come before, between or after the file names.
func (f *flags) parse(args []string) ([]string, error) {
	var files []string
	for {
		if err := f.fs.Parse(args); err != nil {
			return nil, err
		}
		rest := f.fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(files, rest...), nil
		}
		if len(rest) == 0 {
			return files, nil
		}
		files = append(files, rest[0])
		args = rest[1:]
	}
}

func analyzeCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newFlags(stderr)
	f.fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: orphanwatch analyze [flags] FILE...  (\"-\" reads standard input)\n\n")
		f.fs.PrintDefaults()
	}
	files, err := f.parse(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if f.format != "text" && f.format != "json" {
		fmt.Fprintf(stderr, "orphanwatch: --format must be text or json, got %q\n", f.format)
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "orphanwatch: no input: give one or more trace files, or - for standard input")
		return exitUsage
	}
	stdinUsed := 0
	for _, name := range files {
		if name == "-" {
			stdinUsed++
		}
	}
	if stdinUsed > 1 {
		fmt.Fprintln(stderr, `orphanwatch: "-" (standard input) given more than once`)
		return exitUsage
	}
	set, err := settings.Load(f.config, f.prices)
	if err != nil {
		fmt.Fprintf(stderr, "orphanwatch: %v\n", err)
		return exitUsage
	}

	status := exitOK
	var inputs []analyze.Input
	for _, name := range files {
		res, err := readInput(name, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "orphanwatch: %s: %v\n", displayName(name), err)
			status = exitInput
			continue
		}
		inputs = append(inputs, analyze.Input{Name: displayName(name), Result: res})
	}
	if len(inputs) == 0 {
		return status
	}
	out, err := analyze.Run(ctx, set.Processor, inputs)
	if err != nil {
		fmt.Fprintf(stderr, "orphanwatch: %v\n", err)
		return exitUsage
	}
	switch {
	case f.metrics:
		rec, err := analyze.Metrics(out, &set.Exporter.Settings)
		if err == nil {
			err = rec.WriteText(stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "orphanwatch: metrics: %v\n", err)
			return exitUsage
		}
	case f.format == "json":
		if f.spans {
			out.Report.WithSpanVerdicts()
		}
		if err := render.JSON(stdout, out.Report); err != nil {
			fmt.Fprintf(stderr, "orphanwatch: %v\n", err)
			return exitInput
		}
	default:
		if f.spans {
			out.Report.WithSpanVerdicts()
		}
		if err := render.Text(stdout, out.Report, f.spans); err != nil {
			fmt.Fprintf(stderr, "orphanwatch: %v\n", err)
			return exitInput
		}
	}
	if status == exitOK && f.failOnOrphaned && out.Report.Summary.Liveness.Orphaned > 0 {
		return exitOrphaned
	}
	return status
}

func displayName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return name
}

// readInput reads and parses one input; the error says what is wrong, the caller names it.
func readInput(name string, stdin io.Reader) (*input.Result, error) {
	var (
		data []byte
		err  error
	)
	if name == "-" {
		data, err = input.ReadAll(stdin)
	} else {
		var fh *os.File
		fh, err = os.Open(name)
		if err != nil {
			return nil, cleanPathError(err)
		}
		defer fh.Close()
		if st, serr := fh.Stat(); serr == nil && st.IsDir() {
			return nil, errors.New("is a directory")
		}
		data, err = input.ReadAll(fh)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", cleanPathError(err))
	}
	return input.Parse(data)
}

// cleanPathError drops the path from an *os.PathError: the caller already names the file.
func cleanPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(err, os.ErrNotExist) {
			msg = "no such file"
		}
		return errors.New(strings.TrimSpace(msg))
	}
	return err
}
