//! SVG charts from records: ops/s per workload per engine (grouped bars,
//! log scale) and one latency CDF per workload.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::record::Record;
use crate::report::workloads_in_order;
use crate::{Error, Result};

const COLORS: [RGBColor; 12] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x39, 0x3b, 0x79),
    RGBColor(0xad, 0x49, 0x4a),
];

fn perr<E: std::fmt::Debug>(e: E) -> Error {
    Error(format!("drawing a chart: {e:?}"))
}

/// `engine` or `engine/variant` for non-default variants.
fn series_name(r: &Record) -> String {
    if r.variant == "default" {
        r.engine.clone()
    } else {
        format!("{}/{}", r.engine, r.variant)
    }
}

fn series_in_order(records: &[Record]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        let n = series_name(r);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Makes a name safe as a file name.
fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Draws every chart into `dir`; returns the files written.
pub fn plot_all(records: &[Record], dir: &Path) -> Result<Vec<PathBuf>> {
    if records.is_empty() {
        return Err(Error::msg("no records to plot"));
    }
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    let bars = dir.join("ops_per_sec.svg");
    plot_throughput(records, &bars)?;
    out.push(bars);
    for w in workloads_in_order(records) {
        let p = dir.join(format!("latency_cdf_{}.svg", file_safe(&w)));
        plot_cdf(records, &w, &p)?;
        out.push(p);
    }
    Ok(out)
}

/// Grouped bars: one group per workload, one bar per engine (and variant).
pub fn plot_throughput(records: &[Record], path: &Path) -> Result<()> {
    let workloads = workloads_in_order(records);
    let series = series_in_order(records);
    let n = workloads.len().max(1) as f64;
    let max = records.iter().map(|r| r.ops_per_sec).fold(1.0f64, f64::max);
    let min = records
        .iter()
        .map(|r| r.ops_per_sec)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    // From the power of ten below the slowest bar to above the fastest.
    let ymin = if min.is_finite() {
        10f64.powf(min.log10().floor())
    } else {
        1.0
    };
    let ymax = 10f64.powf((max * 1.5).log10().ceil()).max(ymin * 10.0);
    let width = (200 + 70 * workloads.len() * series.len().max(1)).clamp(640, 2400) as u32;
    let root = SVGBackend::new(path, (width, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(perr)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Throughput (ops/s, log scale)", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0f64..n, (ymin..ymax).log_scale())
        .map_err(perr)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_label_formatter(&|_| String::new())
        .y_desc("ops/s")
        .y_label_formatter(&|y| crate::report::thousands(*y))
        .draw()
        .map_err(perr)?;
    let bar_w = 0.8 / series.len().max(1) as f64;
    for (si, s) in series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        let bars: Vec<(f64, f64)> = workloads
            .iter()
            .enumerate()
            .filter_map(|(wi, w)| {
                records
                    .iter()
                    .find(|r| &r.workload == w && &series_name(r) == s)
                    .map(|r| (wi as f64 + 0.1 + si as f64 * bar_w, r.ops_per_sec.max(ymin)))
            })
            .collect();
        chart
            .draw_series(
                bars.iter().map(|&(x, y)| {
                    Rectangle::new([(x, ymin), (x + bar_w * 0.95, y)], color.filled())
                }),
            )
            .map_err(perr)?
            .label(s.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        let style = TextStyle::from(("sans-serif", 11).into_font())
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(
                bars.iter().map(|&(x, y)| {
                    Text::new(short(y), (x + bar_w * 0.475, y * 1.05), style.clone())
                }),
            )
            .map_err(perr)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(perr)?;
    // Workload names under each group, in pixels below the x axis.
    let label =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (wi, w) in workloads.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(wi as f64 + 0.5, ymin));
        root.draw(&Text::new(w.clone(), (px, py + 8), label.clone()))
            .map_err(perr)?;
    }
    root.present().map_err(perr)?;
    Ok(())
}

/// Grouped bars: one group per entry of `groups`, one bar per entry of
/// `series` (`value(group, series)`, `None` or non-positive: no bar), on a
/// log or linear value axis, each bar labelled with its value.
pub fn plot_grouped_bars(
    path: &Path,
    caption: &str,
    y_desc: &str,
    groups: &[String],
    series: &[String],
    log: bool,
    value: impl Fn(&str, &str) -> Option<f64>,
) -> Result<()> {
    let vals: Vec<Vec<Option<f64>>> = series
        .iter()
        .map(|s| {
            groups
                .iter()
                .map(|g| value(g, s).filter(|v| *v > 0.0 && v.is_finite()))
                .collect()
        })
        .collect();
    let all = || vals.iter().flatten().flatten().copied();
    let max = all().fold(1.0f64, f64::max);
    let min = all().fold(f64::INFINITY, f64::min);
    let n = groups.len().max(1) as f64;
    let width = (220 + 36 * groups.len() * series.len().max(1)).clamp(720, 2400) as u32;
    let root = SVGBackend::new(path, (width, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(perr)?;
    let bar_w = 0.8 / series.len().max(1) as f64;
    let label =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    let value_style =
        TextStyle::from(("sans-serif", 10).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    // The same drawing on either value axis (their coordinate types differ).
    macro_rules! draw {
        ($chart:expr, $base:expr, $above:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .x_label_formatter(&|_| String::new())
                .y_desc(y_desc)
                .y_label_formatter(&|y| short(*y))
                .draw()
                .map_err(perr)?;
            for (si, s) in series.iter().enumerate() {
                let color = COLORS[si % COLORS.len()];
                let bars: Vec<(f64, f64)> = vals[si]
                    .iter()
                    .enumerate()
                    .filter_map(|(gi, v)| v.map(|v| (gi as f64 + 0.1 + si as f64 * bar_w, v)))
                    .collect();
                chart
                    .draw_series(bars.iter().map(|&(x, y)| {
                        Rectangle::new([(x, $base), (x + bar_w * 0.95, y)], color.filled())
                    }))
                    .map_err(perr)?
                    .label(s.as_str())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                    });
                chart
                    .draw_series(bars.iter().map(|&(x, y)| {
                        Text::new(
                            short(y),
                            (x + bar_w * 0.475, $above(y)),
                            value_style.clone(),
                        )
                    }))
                    .map_err(perr)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(perr)?;
            for (gi, g) in groups.iter().enumerate() {
                let (px, py) = chart.backend_coord(&(gi as f64 + 0.5, $base));
                root.draw(&Text::new(g.clone(), (px, py + 8), label.clone()))
                    .map_err(perr)?;
            }
        }};
    }
    if log {
        let ymin = if min.is_finite() {
            10f64.powf(min.log10().floor())
        } else {
            1.0
        };
        let ymax = 10f64.powf((max * 3.0).log10().ceil()).max(ymin * 10.0);
        let chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0f64..n, (ymin..ymax).log_scale())
            .map_err(perr)?;
        draw!(chart, ymin, |y: f64| y * 1.05);
    } else {
        // Room above the bars for the legend.
        let top = max * 1.7;
        let chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0f64..n, 0.0f64..top)
            .map_err(perr)?;
        draw!(chart, 0.0f64, |y: f64| y + top * 0.01);
    }
    root.present().map_err(perr)?;
    Ok(())
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Latency CDF of `workload`: percentile against latency (µs, log scale),
/// one line per engine (and variant).
pub fn plot_cdf(records: &[Record], workload: &str, path: &Path) -> Result<()> {
    let rows: Vec<&Record> = records.iter().filter(|r| r.workload == workload).collect();
    let lo = rows
        .iter()
        .flat_map(|r| r.latency_cdf_us.iter().map(|p| p.1))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let hi = rows
        .iter()
        .flat_map(|r| r.latency_cdf_us.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let lo = if lo.is_finite() { lo * 0.8 } else { 0.01 };
    let hi = (hi * 1.25).max(lo * 10.0);
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(perr)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{workload}: latency CDF"), ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0f64..100.0)
        .map_err(perr)?;
    chart
        .configure_mesh()
        .x_desc("latency (µs, log scale)")
        .y_desc("percentile")
        .draw()
        .map_err(perr)?;
    for (i, r) in rows.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<(f64, f64)> = r
            .latency_cdf_us
            .iter()
            .map(|&(p, v)| (v.max(lo), p))
            .collect();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(perr)?
            .label(series_name(r))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(perr)?;
    root.present().map_err(perr)?;
    Ok(())
}
