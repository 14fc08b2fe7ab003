//! The report as one HTML page: the summary table and the plots a reader
//! of *The Illusion of Thinking* expects, drawn by plotters as inline SVG.
//! Nothing is loaded from elsewhere (no script, no font, no style sheet):
//! the page opens from a file, offline.
//!
//! Each plot is a `<figure>` whose `data-series` attribute lists its series
//! (as its legend names them), so a reader or a test can find them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use std::ops::Range;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::{OPTIMALITY_BINS, Report, Tally};

const SIZE: (u32, u32) = (720, 420);
/// Axis labels, legends and captions (+4) in pixels: legible at the plot's
/// own size (plotters' default, 12, is not).
const LABEL_PX: u32 = 15;

/// One line of a plot: its name, its points and, for shares, each
/// point's 95 % interval (empty: none drawn).
#[derive(Default)]
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    intervals: Vec<(f64, f64)>,
}

pub fn page(r: &Report) -> Result<String, String> {
    let mut body = String::new();
    let _ = write!(body, "<h1>Ludus result records</h1>\n<p>{}.</p>\n", escape(&r.totals()));
    // The ratings first: they are what an evaluator comparing agents reads.
    body.push_str(&standings(r, Standings::Ratings));
    body.push_str(&table(r));
    let policies = r.policies_text();
    if !policies.is_empty() {
        let items: String = policies.lines().map(|l| format!("<li>{}</li>", escape(l))).collect();
        let _ = writeln!(body, "<ul class=\"policies\">{items}</ul>");
    }
    body.push_str(&standings(r, Standings::Accuracy));

    for (game, series) in r.accuracy_series() {
        let series: Vec<Series> = series.iter().map(|(name, sizes)| ratio_series(name, sizes)).collect();
        let title = format!("{game}: accuracy against size");
        let svg = line_chart(&Axes { title: &title, x: "n", y: "solved or won", ..Axes::default() }, &series)?;
        body.push_str(&figure(&format!("accuracy-{game}"), &title, &series, &svg));
    }
    if !r.moves.is_empty() {
        let series: Vec<Series> = r
            .moves
            .iter()
            .map(|(game, by_optimum)| Series {
                name: game.clone(),
                points: by_optimum.iter().map(|(&o, t)| (f64::from(o), t.points / t.games as f64)).collect(),
                ..Series::default()
            })
            .collect();
        let title = "Moves made against the optimum (solved games, mean; both axes logarithmic)";
        let axes = Axes { title, x: "optimum", y: "moves made", unit_y: false, diagonal: true, log: true };
        let svg = line_chart(&axes, &series)?;
        body.push_str(&figure("moves", title, &series, &svg));
    }
    for (game, by_caller) in &r.levels {
        let series: Vec<Series> = by_caller.iter().map(|(caller, levels)| ratio_series(caller_name(caller), levels)).collect();
        let title = format!("{game}: score against engine level");
        let svg = line_chart(&Axes { title: &title, x: "level", y: "score (win 1, draw ½)", ..Axes::default() }, &series)?;
        body.push_str(&figure(&format!("levels-{game}"), &title, &series, &svg));
    }
    if r.optimality.iter().any(|&n| n > 0) {
        let title = "Showdown: optimality of each decision";
        let svg = histogram(title, &r.optimality)?;
        let series = [Series { name: "decisions".into(), ..Series::default() }];
        body.push_str(&figure("optimality", title, &series, &svg));
    }
    Ok(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Ludus result records</title>\n<style>\n{STYLE}</style></head>\n<body>\n{body}</body></html>\n"
    ))
}

const STYLE: &str = "body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 2em; }
caption { text-align: left; font-weight: bold; padding: 0.25em 0; }
th, td { padding: 0.25em 0.75em; border-bottom: 1px solid #ddd; white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 0 1.5em 2em 0; display: inline-block; vertical-align: top; max-width: 100%; }
figure svg { max-width: 100%; height: auto; }
";

fn caller_name(caller: &str) -> &str {
    if caller.is_empty() { "(no caller)" } else { caller }
}

/// Points (x, points ÷ games) of one caller, each with its Wilson 95 % interval.
fn ratio_series(name: &str, by_x: &BTreeMap<u64, Tally>) -> Series {
    let share = |t: &Tally| t.points / t.games as f64;
    Series {
        name: name.to_string(),
        points: by_x.iter().map(|(&x, t)| (x as f64, share(t))).collect(),
        intervals: by_x.values().map(|t| super::ratings::wilson_share(share(t), t.games).unwrap_or((0.0, 1.0))).collect(),
    }
}

fn table(r: &Report) -> String {
    let mut t = String::from("<table>\n<tr>");
    for (i, h) in super::HEAD.iter().enumerate() {
        let _ = write!(t, "<th{}>{h}</th>", if i >= 3 { " class=\"n\"" } else { "" });
    }
    t.push_str("</tr>\n");
    for row in r.rows() {
        t.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let _ = write!(t, "<td{}>{}</td>", if i >= 3 { " class=\"n\"" } else { "" }, escape(cell));
        }
        t.push_str("</tr>\n");
    }
    let _ = write!(t, "</table>\n<p>{}</p>\n", escape(super::ABANDONED_NOTE));
    t
}

/// Which tables of standings (`standings`).
#[derive(Clone, Copy)]
enum Standings {
    Ratings,
    Accuracy,
}

/// The ratings or the accuracy tables, under their heading and note.
fn standings(r: &Report, which: Standings) -> String {
    use super::standings::{ACCURACY_HEAD, ACCURACY_NOTE, RATING_HEAD, RATING_NOTE};
    let (id, heading, note, head, tables) = match which {
        Standings::Ratings => ("ratings", "Ratings", RATING_NOTE, RATING_HEAD, r.rating_tables()),
        Standings::Accuracy => ("accuracy", "Accuracy by size", ACCURACY_NOTE, ACCURACY_HEAD, r.accuracy_tables()),
    };
    let mut t = String::new();
    if tables.is_empty() {
        return t;
    }
    let _ = writeln!(t, "<h2 id=\"{id}\">{heading}</h2>\n<p>{}</p>", escape(note));
    for (name, rows) in tables {
        let _ = write!(t, "<table data-{id}=\"{}\">\n<caption>{}</caption>\n<tr>", escape(&name), escape(&name));
        for (i, h) in head.iter().enumerate() {
            let _ = write!(t, "<th{}>{h}</th>", if i >= 1 { " class=\"n\"" } else { "" });
        }
        t.push_str("</tr>\n");
        for row in rows {
            t.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let _ = write!(t, "<td{}>{}</td>", if i >= 1 { " class=\"n\"" } else { "" }, escape(cell));
            }
            t.push_str("</tr>\n");
        }
        t.push_str("</table>\n");
    }
    t
}

/// A plot in its figure; the title is the plot's own caption (`aria-label` for screen readers).
fn figure(id: &str, title: &str, series: &[Series], svg: &str) -> String {
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    let names = serde_json::to_string(&names).unwrap_or_default();
    format!("<figure id=\"{}\" data-series=\"{}\" aria-label=\"{}\">\n{svg}\n</figure>\n", escape(id), escape(&names), escape(title))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn plot_error<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing a plot failed: {e:?}")
}

/// The range `[lo, hi]` widened a little (and made non-empty).
fn padded(lo: f64, hi: f64) -> (f64, f64) {
    if hi <= lo {
        return (lo - 1.0, hi + 1.0);
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad, hi + pad)
}

/// What a line chart shows and how.
struct Axes<'a> {
    title: &'a str,
    x: &'a str,
    y: &'a str,
    /// y is a share, from 0 to 1.
    unit_y: bool,
    /// Draw y = x for reference (moves against the optimum).
    diagonal: bool,
    /// Both axes logarithmic (an optimum of 2^n − 1 spans decades).
    log: bool,
}

impl Default for Axes<'_> {
    fn default() -> Self {
        Axes { title: "", x: "", y: "", unit_y: true, diagonal: false, log: false }
    }
}

/// A line per series, with its points marked and a legend. Logarithmic
/// axes are drawn as log10 of the values on linear axes, labelled with the
/// values themselves.
fn line_chart(axes: &Axes, series: &[Series]) -> Result<String, String> {
    let scale = |v: f64| if axes.log { v.max(1.0).log10() } else { v };
    let series: Vec<Series> = series
        .iter()
        .map(|s| Series {
            name: s.name.clone(),
            points: s.points.iter().map(|&(x, y)| (scale(x), scale(y))).collect(),
            intervals: if axes.log { Vec::new() } else { s.intervals.clone() },
        })
        .collect();
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (x_lo, x_hi) = padded(xs.clone().fold(f64::INFINITY, f64::min), xs.fold(f64::NEG_INFINITY, f64::max));
    // A share's plot leaves a band above 1 for the legend, so that it
    // covers no point: a line of it per series.
    let (y_lo, y_hi) = if axes.unit_y {
        (0.0, 1.08 + 0.1 * (series.len() + 1) as f64)
    } else {
        let hi = ys.fold(f64::NEG_INFINITY, f64::max).max(if axes.diagonal { x_hi } else { f64::NEG_INFINITY });
        padded(0.0, hi)
    };
    let (x_label, y_label, diagonal) = (axes.x, axes.y, axes.diagonal);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let mut chart = chart_on(&root, axes.title, x_lo..x_hi, y_lo..y_hi)?;
        let chart = &mut chart;
        // Sizes, optima, levels and moves are whole numbers: label them so.
        let log = axes.log;
        let whole = move |v: &f64| {
            let v = if log { 10f64.powf(*v) } else { *v };
            if (v - v.round()).abs() < 1e-6 || log { format!("{}", v.round()) } else { format!("{v:.1}") }
        };
        let share = |v: &f64| if *v <= 1.0 + 1e-9 { format!("{v:.1}") } else { String::new() };
        let mut mesh = chart.configure_mesh();
        mesh.x_labels(((x_hi - x_lo).ceil() as usize + 1).clamp(2, 10)).x_label_formatter(&whole);
        if !axes.unit_y {
            mesh.y_label_formatter(&whole);
        } else {
            mesh.y_label_formatter(&share);
        }
        mesh.label_style(("sans-serif", LABEL_PX)).axis_desc_style(("sans-serif", LABEL_PX + 1));
        mesh.x_desc(x_label).y_desc(y_label).draw().map_err(plot_error)?;
        if diagonal {
            let style = BLACK.mix(0.4).stroke_width(1);
            chart
                .draw_series(LineSeries::new([(x_lo.max(0.0), x_lo.max(0.0)), (x_hi, x_hi)], style))
                .map_err(plot_error)?
                .label("optimum")
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        }
        // Equal series would hide each other: each has its own marker, and
        // on a whole-number axis (sizes, levels) each is shifted a little
        // sideways, symmetrically about the true x.
        let dodge = if log || series.len() < 2 { 0.0 } else { 0.08 };
        for (i, s) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let shift = dodge * (i as f64 - (series.len() - 1) as f64 / 2.0);
            let points: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (x + shift, y)).collect();
            // Each point's interval first, under its line and marker.
            let bar =
                |(&(x, _), &(lo, hi)): (&(f64, f64), &(f64, f64))| PathElement::new([(x, lo), (x, hi)], color.mix(0.6).stroke_width(1));
            chart.draw_series(points.iter().zip(&s.intervals).map(bar)).map_err(plot_error)?;
            let line = chart.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2))).map_err(plot_error)?;
            let line = line.label(&s.name);
            let stroke = color.stroke_width(2);
            match Marker::of(i) {
                Marker::Circle => {
                    line.legend(move |(x, y)| {
                        EmptyElement::at((x, y)) + PathElement::new([(0, 0), (20, 0)], stroke) + Circle::new((10, 0), 4, color.filled())
                    });
                    chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled()))).map_err(plot_error)?;
                }
                Marker::Triangle => {
                    line.legend(move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new([(0, 0), (20, 0)], stroke)
                            + TriangleMarker::new((10, 0), 6, color.filled())
                    });
                    chart.draw_series(points.iter().map(|&p| TriangleMarker::new(p, 6, color.filled()))).map_err(plot_error)?;
                }
                Marker::Square => {
                    line.legend(move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new([(0, 0), (20, 0)], stroke)
                            + Rectangle::new([(6, -4), (14, 4)], color.filled())
                    });
                    let square = |p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], color.filled());
                    chart.draw_series(points.iter().map(|&p| square(p))).map_err(plot_error)?;
                }
                Marker::Cross => {
                    line.legend(move |(x, y)| {
                        EmptyElement::at((x, y)) + PathElement::new([(0, 0), (20, 0)], stroke) + Cross::new((10, 0), 5, stroke)
                    });
                    chart.draw_series(points.iter().map(|&p| Cross::new(p, 5, stroke))).map_err(plot_error)?;
                }
            }
        }
        chart
            .configure_series_labels()
            // Rising lines (moves against the optimum) leave the lower right free; falling ones the upper right.
            .position(if diagonal { SeriesLabelPosition::LowerRight } else { SeriesLabelPosition::UpperLeft })
            .label_font(("sans-serif", LABEL_PX))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// The mark of each point of a series, by the series' place: four kinds in turn.
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

impl Marker {
    fn of(series: usize) -> Marker {
        match series % 4 {
            0 => Marker::Circle,
            1 => Marker::Triangle,
            2 => Marker::Square,
            _ => Marker::Cross,
        }
    }
}

/// A white chart with its caption and axes' room, on `root`.
fn chart_on<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x: Range<f64>,
    y: Range<f64>,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>, String> {
    root.fill(&WHITE).map_err(plot_error)?;
    ChartBuilder::on(root)
        .caption(title, ("sans-serif", LABEL_PX + 4))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(plot_error)
}

/// Bars over [0, 1], one per bin.
fn histogram(title: &str, bins: &[u64; OPTIMALITY_BINS]) -> Result<String, String> {
    let top = bins.iter().copied().max().unwrap_or(1).max(1) as f64 * 1.1;
    let width = 1.0 / OPTIMALITY_BINS as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let mut chart = chart_on(&root, title, 0.0..1.0, 0.0..top)?;
        chart
            .configure_mesh()
            .y_label_formatter(&|v| format!("{}", v.round()))
            .label_style(("sans-serif", LABEL_PX))
            .axis_desc_style(("sans-serif", LABEL_PX + 1))
            .x_desc("optimality (1: the search's best action)")
            .y_desc("decisions")
            .draw()
            .map_err(plot_error)?;
        let color = Palette99::pick(0).to_rgba();
        chart
            .draw_series(bins.iter().enumerate().map(|(i, &n)| {
                let x = i as f64 * width;
                Rectangle::new([(x, 0.0), (x + width * 0.9, n as f64)], color.filled())
            }))
            .map_err(plot_error)?
            .label("decisions")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
        let mut labels = chart.configure_series_labels();
        labels.position(SeriesLabelPosition::UpperLeft).label_font(("sans-serif", LABEL_PX)).border_style(BLACK.mix(0.3));
        labels.draw().map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}
