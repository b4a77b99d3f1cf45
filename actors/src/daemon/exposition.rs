//! Which text the metrics are written in: Prometheus' classic exposition format 0.0.4 (the
//! default, what every Prometheus and its textfile tools parse) or OpenMetrics 1.0 (what a scraper
//! asks for with `Accept: application/openmetrics-text`). `prometheus-client` writes OpenMetrics
//! only; [`to_classic`] rewrites its output line by line: a counter's `# TYPE` and `# HELP` name its
//! `_total` sample, `unknown` becomes `untyped`, `info` a gauge, and `# EOF`, `# UNIT` and
//! `_created` samples are left out.

/// A text exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposition {
    /// Prometheus' text format 0.0.4.
    Classic,
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
}

impl Exposition {
    /// The format an HTTP `Accept` header asks for: OpenMetrics where it names
    /// `application/openmetrics-text` (with a quality above 0), else the classic format.
    pub fn from_accept(accept: Option<&str>) -> Exposition {
        let wants_openmetrics = accept.is_some_and(|a| {
            a.split(',').any(|range| {
                let mut parts = range.split(';').map(str::trim);
                let media = parts.next().unwrap_or("");
                let refused = parts.any(|p| {
                    p.strip_prefix("q=")
                        .and_then(|q| q.trim().parse::<f64>().ok())
                        .is_some_and(|q| q <= 0.0)
                });
                media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
            })
        });
        if wants_openmetrics {
            Exposition::OpenMetrics
        } else {
            Exposition::Classic
        }
    }

    /// The `Content-Type` of a body in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Exposition::Classic => "text/plain; version=0.0.4; charset=utf-8",
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The classic (0.0.4) text of an OpenMetrics exposition written by `prometheus-client`.
pub fn to_classic(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // Each family's OpenMetrics type (its HELP line comes before its TYPE line).
    let types: std::collections::HashMap<&str, &str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.split_once(' '))
        .collect();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let (what, name, tail) = (
                words.next().unwrap_or(""),
                words.next().unwrap_or(""),
                words.next().unwrap_or(""),
            );
            match what {
                "EOF" | "UNIT" => {}
                "TYPE" => {
                    let (name, ty) = classic_family(name, tail);
                    out.push_str(&format!("# TYPE {name} {ty}\n"));
                }
                "HELP" => {
                    let ty = types.get(name).copied().unwrap_or("unknown");
                    let (name, _) = classic_family(name, ty);
                    // OpenMetrics escapes `"` in HELP; 0.0.4 escapes only `\` and newlines.
                    out.push_str(&format!("# HELP {name} {}\n", tail.replace("\\\"", "\"")));
                }
                _ => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let name = &line[..name_end];
        if let Some(family) = name.strip_suffix("_created") {
            if matches!(
                types.get(family),
                Some(&("counter" | "histogram" | "summary" | "gaugehistogram"))
            ) {
                continue;
            }
        }
        // An exemplar (` # {…} v`) has no place in 0.0.4.
        let sample = match line.find(" # {") {
            Some(at) => &line[..at],
            None => line,
        };
        out.push_str(sample);
        out.push('\n');
    }
    out
}

/// The classic family name and type of an OpenMetrics family.
fn classic_family<'a>(name: &'a str, ty: &'a str) -> (std::borrow::Cow<'a, str>, &'a str) {
    match ty {
        "counter" => (format!("{name}_total").into(), "counter"),
        "info" => (format!("{name}_info").into(), "gauge"),
        "stateset" => (name.into(), "gauge"),
        "gaugehistogram" => (name.into(), "histogram"),
        "unknown" => (name.into(), "untyped"),
        other => (name.into(), other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENMETRICS: &str = "# HELP cuzk_proofs_completed Jobs \\\"completed\\\".\n\
# TYPE cuzk_proofs_completed counter\n\
cuzk_proofs_completed_total{kind=\"porep\"} 3\n\
cuzk_proofs_completed_created{kind=\"porep\"} 1700000000.0\n\
# HELP cuzk_ready Whether ready.\n\
# TYPE cuzk_ready gauge\n\
# UNIT cuzk_ready ratio\n\
cuzk_ready{state=\"ready\"} 1\n\
# TYPE cuzk_build info\n\
cuzk_build_info{version=\"1\"} 1\n\
# EOF\n";

    #[test]
    fn the_classic_text_names_counters_by_their_total_and_has_no_eof_unit_or_created() {
        let c = to_classic(OPENMETRICS);
        assert_eq!(
            c,
            "# HELP cuzk_proofs_completed_total Jobs \"completed\".\n\
# TYPE cuzk_proofs_completed_total counter\n\
cuzk_proofs_completed_total{kind=\"porep\"} 3\n\
# HELP cuzk_ready Whether ready.\n\
# TYPE cuzk_ready gauge\n\
cuzk_ready{state=\"ready\"} 1\n\
# TYPE cuzk_build_info gauge\n\
cuzk_build_info{version=\"1\"} 1\n"
        );
    }

    #[test]
    fn openmetrics_is_served_only_when_the_accept_header_asks_for_it() {
        use Exposition::*;
        assert_eq!(Exposition::from_accept(None), Classic);
        assert_eq!(Exposition::from_accept(Some("*/*")), Classic);
        assert_eq!(
            Exposition::from_accept(Some("text/plain;version=0.0.4")),
            Classic
        );
        // What Prometheus sends by default.
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Exposition::from_accept(Some(prometheus)), OpenMetrics);
        assert_eq!(
            Exposition::from_accept(Some("application/openmetrics-text;q=0, text/plain")),
            Classic
        );
    }
}
