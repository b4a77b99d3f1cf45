//! The crate's rooms keep their direction (see the crate documentation): `pipeline/` and
//! `resources/` never import `daemon/`, and `resources/` never imports `pipeline/`. Checked on
//! the sources, so a reference that breaks it fails here, naming its file and line.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `actors/src/<room>`, in a stable order.
fn sources(room: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(room);
    let mut out = Vec::new();
    walk(&dir, &mut out);
    assert!(!out.is_empty(), "no sources under {}", dir.display());
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte offsets where `word` stands as a whole identifier in `code`.
fn word_at(code: &str, word: &str) -> Vec<usize> {
    code.match_indices(word)
        .map(|(i, _)| i)
        .filter(|&i| {
            let before = code[..i].chars().next_back();
            let after = code[i + word.len()..].chars().next();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
        .collect()
}

/// Whether the path that ends just before an occurrence of the room's name reaches the crate's
/// top level: `crate::room`, or `super::room` (one or more `super`s; inside a room every
/// `super` chain that names another room climbs out of it).
fn rooted_above(before: &str) -> bool {
    let Some(rest) = before.trim_end().strip_suffix("::") else {
        return false;
    };
    let rest = rest.trim_end();
    // `crate::room`, or `super::room` after any number of `super::`s.
    ["crate", "super"].iter().any(|root| {
        rest.strip_suffix(root)
            .is_some_and(|r| !r.ends_with(is_ident))
    })
}

/// The code of a line: comments (`//`, `///`, `//!` and a line's trailing comment) left out.
fn code_of(line: &str) -> &str {
    match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    }
}

/// The lines (1-based) of `text` that refer to the module `room` at the crate's top level:
/// `crate::room…` or `super::…::room…` anywhere in code, and `room` inside a `use crate::{…}`
/// (or `use super::{…}`) group, over however many lines the `use` spans.
fn references(text: &str, room: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    // A `use` statement being read: its first line, and its code so far.
    let mut statement: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let code = code_of(line);
        let n = i + 1;
        if word_at(code, room)
            .into_iter()
            .any(|at| rooted_above(&code[..at]))
        {
            found.push((n, line.trim().to_string()));
        }
        let trimmed = code.trim_start();
        let starts_use = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .any(|p| trimmed.starts_with(p));
        if statement.is_none() && starts_use {
            statement = Some((n, String::new()));
        }
        if let Some((first, s)) = &mut statement {
            s.push_str(code);
            s.push(' ');
            if code.contains(';') {
                let path = s.split_once("use ").map_or("", |(_, p)| p).trim_start();
                let grouped = path.starts_with("crate") || path.starts_with("super");
                let in_group = word_at(s, room)
                    .into_iter()
                    .any(|at| s[..at].trim_end().ends_with(['{', ',']));
                if grouped && in_group && !found.iter().any(|(l, _)| l == first) {
                    found.push((*first, s.split_whitespace().collect::<Vec<_>>().join(" ")));
                }
                statement = None;
            }
        }
    }
    found
}

/// Every reference from the files of `rooms` to the room `forbidden`, as `file:line: code`.
fn violations(rooms: &[&str], forbidden: &str) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    for room in rooms {
        for file in sources(room) {
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
            for (line, code) in references(&text, forbidden) {
                let name = file.strip_prefix(&src).unwrap_or(&file).display();
                out.push(format!("src/{name}:{line}: {code}"));
            }
        }
    }
    out
}

#[test]
fn pipeline_and_resources_never_import_the_daemon() {
    let v = violations(&["pipeline", "resources"], "daemon");
    assert!(
        v.is_empty(),
        "the pipeline and the resources must not use the daemon (it uses them):\n{}",
        v.join("\n")
    );
}

#[test]
fn resources_never_import_the_pipeline() {
    let v = violations(&["resources"], "pipeline");
    assert!(
        v.is_empty(),
        "the resources must not use the pipeline (it uses them):\n{}",
        v.join("\n")
    );
}

#[test]
fn the_room_check_finds_every_form_of_reference_and_only_those() {
    let lines = |text: &str| -> Vec<usize> {
        references(text, "daemon")
            .into_iter()
            .map(|(l, _)| l)
            .collect()
    };
    // Each of these refers to the daemon.
    assert_eq!(lines("use crate::daemon::settings::Settings;"), [1]);
    assert_eq!(lines("pub use crate::daemon;"), [1]);
    assert_eq!(
        lines("    let s = crate::daemon::settings::DEFAULT_TOML;"),
        [1]
    );
    assert_eq!(lines("use super::super::daemon::metrics;"), [1]);
    assert_eq!(lines("fn f(x: super::daemon::jobs::JobTable) {}"), [1]);
    assert_eq!(lines("use crate::{log, daemon};"), [1]);
    assert_eq!(lines("use crate::{log, daemon::jobs::JobTable};"), [1]);
    assert_eq!(
        lines("use std::sync::Arc;\n\nuse crate::{\n    log,\n    daemon::{jobs, metrics},\n};\n"),
        [3]
    );
    assert_eq!(lines("use super::{\n    super::x,\n    daemon,\n};"), [1]);
    // These do not.
    assert!(lines("//! the daemon: see [`daemon`](crate::daemon)").is_empty());
    assert!(lines("/// uses crate::daemon::settings").is_empty());
    assert!(lines("let x = 1; // crate::daemon").is_empty());
    assert!(lines("use crate::pipeline::engine::Engine;").is_empty());
    assert!(lines("let daemon = 3; let d = daemon_threads(daemon);").is_empty());
    assert!(lines("use crate::{log, pipeline::daemonize};").is_empty());
    assert!(lines("use cuzk_engine::daemon::X;").is_empty());
    assert!(lines("let s = mycrate::daemon::X;").is_empty());
}
