// Package dashboards generates orphanwatch's Grafana dashboards with the Grafana foundation SDK:
// orphaned spend, cancellation propagation, and the pipeline's own health. The JSON files beside
// this package are its output (`go run ./cmd/gendashboards` rewrites them); the package's tests
// check that the committed files are exactly what it generates, that every query parses as
// PromQL, and that every query names only metrics that the orphanmetrics exporter, the orphan
// processor or the collector distribution serve.
package dashboards

//go:generate go run ../cmd/gendashboards -out .

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// File is one generated dashboard and the file name it is written to.
type File struct {
	Name  string
	Build func() (dashboard.Dashboard, error)
}

// Files lists the dashboards in the order they are written.
func Files() []File {
	return []File{
		{Name: "orphaned-spend.json", Build: OrphanedSpend},
		{Name: "cancellation-propagation.json", Build: Propagation},
		{Name: "pipeline-health.json", Build: PipelineHealth},
	}
}

// Render builds f and returns its JSON as written to disk (two-space indent, final newline).
func Render(f File) ([]byte, error) {
	d, err := f.Build()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	return buf.Bytes(), nil
}

// WriteAll writes every dashboard into dir.
func WriteAll(dir string) error {
	for _, f := range Files() {
		b, err := Render(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Tag is on every orphanwatch dashboard; the dashboards link to each other through it.
const Tag = "orphanwatch"

// datasource is the dashboards' Prometheus datasource: the ${datasource} variable.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

// base is a dashboard with the datasource variable, links to its siblings and common settings.
func base(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{Tag}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("30s").
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Link(dashboard.NewDashboardLinkBuilder("orphanwatch").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{Tag}).
			AsDropdown(false).
			IncludeVars(true).
			KeepTime(true)).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Prometheus").
			Type("prometheus"))
}

// labelVariable is a multi-value variable over the values of label on metric, "All" by default.
func labelVariable(name, label, metric, title string) *dashboard.QueryVariableBuilder {
	query := fmt.Sprintf("label_values(%s, %s)", metric, label)
	return dashboard.NewQueryVariableBuilder(name).
		Label(title).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*").
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
			Value: dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
		})
}

// promQuery is the query expr on the datasource variable, of reference ref, its series named
// by legend.
func promQuery(ref, expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasource()).
		RefId(ref).
		Expr(expr).
		LegendFormat(legend)
}

// query is a range query drawn with legend.
func query(ref, expr, legend string) *prometheus.DataqueryBuilder {
	return promQuery(ref, expr, legend).Range()
}

// instant is an instant query (for bar gauges over the dashboard's time range).
func instant(ref, expr, legend string) *prometheus.DataqueryBuilder {
	return promQuery(ref, expr, legend).Instant()
}

// ids numbers the panels of one dashboard.
type ids struct{ n uint32 }

func (i *ids) next() uint32 { i.n++; return i.n }

// panelBuilder is what the foundation SDK's panel builders (timeseries, stat, bargauge, table,
// heatmap) have in common, each method returning the builder P.
type panelBuilder[P any] interface {
	Id(id uint32) P
	Title(title string) P
	Description(description string) P
	Datasource(datasource common.DataSourceRef) P
	Span(w uint32) P
	Height(h uint32) P
}

// panel sets what every panel has: its id, title, description, the datasource variable, and
// its width and height in grid units.
func panel[P panelBuilder[P]](p P, id uint32, title, description string, w, h uint32) P {
	return p.Id(id).Title(title).Description(description).Datasource(datasource()).Span(w).Height(h)
}

func graph(id uint32, title, description, unit string, w, h uint32, targets ...cog.Builder[variants.Dataquery]) *timeseries.PanelBuilder {
	p := panel(timeseries.NewPanelBuilder(), id, title, description, w, h).
		Unit(unit).
		Min(0).
		FillOpacity(10).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	for _, t := range targets {
		p.WithTarget(t)
	}
	return p
}

// stacked makes a graph stack its series.
func stacked(p *timeseries.PanelBuilder) *timeseries.PanelBuilder {
	return p.Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).FillOpacity(40)
}

func bigNumber(id uint32, title, description, unit string, target cog.Builder[variants.Dataquery]) *stat.PanelBuilder {
	return panel(stat.NewPanelBuilder(), id, title, description, 6, 4).
		Unit(unit).
		NoValue("0").
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)).
		WithTarget(target)
}

func bars(id uint32, title, description, unit string, w, h uint32, target cog.Builder[variants.Dataquery]) *bargauge.PanelBuilder {
	return panel(bargauge.NewPanelBuilder(), id, title, description, w, h).
		Unit(unit).
		Min(0).
		NoValue("none").
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeGradient).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)).
		WithTarget(target)
}

// spendTable is a table of three instant queries in table format by service_name and model
// (A: orphaned cost in USD, B: tokens, C: model calls), merged into one row per service and
// model, most costly first, the totals in the footer.
func spendTable(id uint32, title, description string, a, b, c *prometheus.DataqueryBuilder) *table.PanelBuilder {
	return panel(table.NewPanelBuilder(), id, title, description, 16, 8).
		NoValue("none").
		Unit("short").
		WithTarget(a).
		WithTarget(b).
		WithTarget(c).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]bool{"Time": true},
			"indexByName":   map[string]int{"service_name": 0, "model": 1, "Value #A": 2, "Value #B": 3, "Value #C": 4},
			"renameByName": map[string]string{"service_name": "Service", "model": "Model",
				"Value #A": "Orphaned cost", "Value #B": "Orphaned tokens", "Value #C": "Orphaned model calls"},
		}}).
		OverrideByName("Orphaned cost", []dashboard.DynamicConfigValue{{Id: "unit", Value: "currencyUSD"}}).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName("Orphaned cost").Desc(true),
		}).
		Footer(common.NewTableFooterOptionsBuilder().Show(true).Reducer([]string{"sum"}).Fields([]string{}))
}

func heat(id uint32, title, description string, w, h uint32, target cog.Builder[variants.Dataquery]) *heatmap.PanelBuilder {
	return panel(heatmap.NewPanelBuilder(), id, title, description, w, h).
		Calculate(false).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit("s")).
		CellValues(heatmap.NewCellValuesBuilder().Unit("short")).
		RowsFrame(heatmap.NewRowsHeatmapOptionsBuilder().Layout(common.HeatmapCellLayoutLe)).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Oranges").
			Steps(64).
			Exponent(0.5).
			Fill("dark-orange").
			Scale(heatmap.HeatmapColorScaleExponential)).
		ShowValue(common.VisibilityModeNever).
		Tooltip(heatmap.NewHeatmapTooltipBuilder().Mode(common.TooltipDisplayModeSingle).YHistogram(true)).
		ExemplarsColor("rgba(255,0,255,0.7)").
		WithTarget(target)
}

// section adds an expanded row titled title and the panels under it.
func section(d *dashboard.DashboardBuilder, id *ids, title string, panels ...cog.Builder[dashboard.Panel]) {
	d.WithRow(dashboard.NewRowBuilder(title).Id(id.next()).Collapsed(false))
	for _, p := range panels {
		d.WithPanel(p)
	}
}
