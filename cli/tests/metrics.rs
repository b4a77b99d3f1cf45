//! The metrics in Prometheus' classic text format (0.0.4), the default on `/metrics`, in gRPC
//! `GetMetrics` and on the control socket: a classic parser reads every counter with its value
//! (the same values the OpenMetrics text has), and `/metrics` answers OpenMetrics only to a scraper
//! whose `Accept` asks for it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use cuzk_actors::daemon::exposition::Exposition;
use cuzk_actors::daemon::metrics::{serve_http, Metrics, State};
use cuzk_actors::{Engine, EngineConfig};

type Key = (String, BTreeMap<String, String>);

/// Every counter sample of an OpenMetrics text: (sample name, labels) → value.
fn openmetrics_counters(text: &str) -> BTreeMap<Key, f64> {
    let counters: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.trim_end_matches('}')),
            None => (series, ""),
        };
        let Some(family) = name.strip_suffix("_total") else {
            continue;
        };
        if !counters.contains(&family) {
            continue;
        }
        let labels = labels
            .split(',')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.trim_matches('"').to_string())
            })
            .collect();
        out.insert((name.to_string(), labels), value.parse().unwrap());
    }
    out
}

/// Every counter of a classic text, read by a classic-format parser.
fn classic_counters(text: &str) -> BTreeMap<Key, f64> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("the classic text parses");
    scrape
        .samples
        .into_iter()
        .filter_map(|s| match s.value {
            prometheus_parse::Value::Counter(v) => {
                let labels = s
                    .labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                Some(((s.metric, labels), v))
            }
            _ => None,
        })
        .collect()
}

fn http_get(addr: &str, accept: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{accept}\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

#[test]
fn metrics_parse_as_prometheus_classic_text_with_every_counter_and_its_value() {
    let backend: Arc<dyn cuzk_engine::Pipeline> = Arc::new(cuzk_engine::CpuBackend::new());
    let engine = Arc::new(
        Engine::start(
            EngineConfig::default(),
            vec![backend],
            Box::new(cuzk_actors::resources::pinner::CountingPin::default()),
        )
        .unwrap(),
    );
    let metrics = Arc::new(Metrics::default());
    for _ in 0..3 {
        metrics.submitted("porep");
    }
    metrics.submitted("snap");
    metrics.ended("porep", "completed", 1.5);
    metrics.ended("porep", "completed", 2.5);
    metrics.ended("porep", "failed", 0.1);
    metrics.ended("snap", "cancelled", 0.2);

    let open = metrics
        .render_as(Exposition::OpenMetrics, &engine, None, State::Ready)
        .unwrap();
    let classic = metrics.render(&engine, None, State::Ready).unwrap();
    assert!(open.contains("# EOF"), "{open}");
    for absent in ["# EOF", "# UNIT", "_created"] {
        assert!(!classic.contains(absent), "`{absent}` in\n{classic}");
    }
    assert!(
        classic.contains("# TYPE cuzk_proofs_submitted_total counter"),
        "{classic}"
    );

    let expected = openmetrics_counters(&open);
    let key = |name: &str, kind: &str| {
        (
            name.to_string(),
            BTreeMap::from([("kind".to_string(), kind.to_string())]),
        )
    };
    // The OpenMetrics text holds what was counted (the reading above is right)…
    assert_eq!(
        expected.get(&key("cuzk_proofs_submitted_total", "porep")),
        Some(&3.0)
    );
    assert_eq!(
        expected.get(&key("cuzk_proofs_completed_total", "porep")),
        Some(&2.0)
    );
    assert_eq!(
        expected.get(&key("cuzk_proofs_cancelled_total", "snap")),
        Some(&1.0)
    );
    // …and the classic parser reads every one of those counters, as a counter, with its value.
    assert_eq!(classic_counters(&classic), expected, "{classic}");

    // Over HTTP: classic unless the scraper asks for OpenMetrics.
    let (m, e) = (metrics.clone(), engine.clone());
    let http = serve_http(
        "127.0.0.1:0",
        Arc::new(move |f| m.render_as(f, &e, None, State::Ready)),
    )
    .unwrap();
    let addr = http.addr.to_string();
    let (head, body) = http_get(&addr, None);
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert_eq!(classic_counters(&body), expected, "{body}");
    let (head, body) = http_get(
        &addr,
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    );
    assert!(
        head.contains("Content-Type: application/openmetrics-text"),
        "{head}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert_eq!(openmetrics_counters(&body), expected);
    engine.shutdown();
}
