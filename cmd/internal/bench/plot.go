package bench

import (
	"fmt"
	"io"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The plot's panel size and the most panels side by side.
const (
	panelWidth  = 12 * vg.Centimeter
	panelHeight = 9 * vg.Centimeter
	panelCols   = 3
)

// percentileNames label the plot's x axis, in the order of
// resultPercentiles.
var percentileNames = []string{"p50", "p99", "p99.9", "max"}

func resultPercentiles(r Result) []float64 {
	return []float64{r.P50us, r.P99us, r.P999us, r.MaxUs}
}

// writePlot draws one panel per (workload, class, group) of rep, each with
// a line per scheduler through its latency percentiles on a log scale, and
// writes it to path as PNG or SVG, as its extension says.
func writePlot(path string, rep *Report) error {
	format, err := plotFormat(path)
	if err != nil {
		return err
	}
	panels := plotPanels(rep)
	if len(panels) == 0 {
		return fmt.Errorf("--plot: no results to plot")
	}
	cols := min(len(panels), panelCols)
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p, err := pn.plot()
		if err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		grid[i/cols][i%cols] = p
	}

	w, h := panelWidth*vg.Length(cols), panelHeight*vg.Length(rows)
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "svg":
		c = vgsvg.New(w, h)
	default:
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	}
	dc := draw.New(c)
	tiles := draw.Tiles{
		Rows: rows, Cols: cols,
		PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3,
		PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3,
	}
	canvases := plot.Align(grid, tiles, dc)
	for i, row := range grid {
		for j, p := range row {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}

	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
}

// panel is one (workload, class, group)'s results, a line per scheduler.
type panel struct {
	workload, class, group string
	results                []Result
}

// plotPanels groups rep's results into panels, in the order they first
// appear; classes with no operations on any scheduler are left out.
func plotPanels(rep *Report) []*panel {
	var panels []*panel
	for _, r := range rep.Results {
		i := slices.IndexFunc(panels, func(p *panel) bool {
			return p.workload == r.Workload && p.class == r.Class && p.group == r.Group
		})
		if i < 0 {
			panels = append(panels, &panel{workload: r.Workload, class: r.Class, group: r.Group})
			i = len(panels) - 1
		}
		panels[i].results = append(panels[i].results, r)
	}
	return slices.DeleteFunc(panels, func(p *panel) bool {
		return !slices.ContainsFunc(p.results, func(r Result) bool { return r.Ops > 0 })
	})
}

func (pn *panel) plot() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.workload + ": " + pn.class
	if pn.group != "" {
		p.Title.Text += " (" + pn.group + ")"
	}
	p.Y.Label.Text = "latency"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = latencyTicks{}
	p.NominalX(percentileNames...)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, r := range pn.results {
		if r.Ops == 0 {
			continue
		}
		pts := make(plotter.XYs, len(percentileNames))
		for j, us := range resultPercentiles(r) {
			// A log axis cannot show 0; nothing here is faster than 1 µs
			// that matters.
			pts[j] = plotter.XY{X: float64(j), Y: max(us, 1)}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		name := r.Scheduler
		if r.Interrupted {
			name += " " + interruptedMark
		}
		p.Legend.Add(name, line, points)
	}
	// Headroom above the lines for the legend (a log axis: a factor).
	p.Y.Max *= 8
	return p, nil
}

// latencyTicks are log-scale ticks over microseconds labelled with units:
// 100µs, 1ms, 10s.
type latencyTicks struct{}

func (latencyTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.LogTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = tickLabel(ticks[i].Value)
		}
	}
	return ticks
}

func tickLabel(us float64) string {
	switch {
	case us < 1e3:
		return fmt.Sprintf("%gµs", us)
	case us < 1e6:
		return fmt.Sprintf("%gms", us/1e3)
	default:
		return fmt.Sprintf("%gs", us/1e6)
	}
}
