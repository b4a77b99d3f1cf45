//! The crate's rooms keep their direction (see the crate documentation): `pipeline/` and
//! `resources/` never import `daemon/`, and `resources/` never imports `pipeline/`. And the
//! public API fails with a typed error: no `pub fn` returns `Result<_, String>` (an embedder
//! gets `cuzk_actors::EngineError`; crate-internal helpers may keep `String`). Both checked on
//! the sources, so a line that breaks them fails here, naming its file and line.

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

/// The signatures (from `pub fn` to the body's `{` or the `;`) of the `pub` functions in `text`
/// that return `Result<_, String>`, with their first line; `pub(crate)`, `pub(super)` and
/// `pub(in …)` are not public and left out.
fn string_results(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = code_of(line).trim_start();
        let Some(rest) = code.strip_prefix("pub ") else {
            continue;
        };
        let rest = ["async ", "const ", "unsafe "]
            .iter()
            .fold(rest.trim_start(), |r, q| r.strip_prefix(q).unwrap_or(r));
        if !rest.starts_with("fn ") {
            continue;
        }
        let mut sig = String::new();
        for l in &lines[i..] {
            let c = code_of(l);
            sig.push_str(c.trim());
            sig.push(' ');
            if c.contains('{') || c.trim_end().ends_with(';') {
                break;
            }
        }
        let sig = sig
            .split('{')
            .next()
            .unwrap_or("")
            .trim()
            .trim_end_matches(';');
        // The return type: after the first `->` outside the parameters' parentheses.
        let mut depth = 0i32;
        let mut arrow = None;
        for (at, c) in sig.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                '-' if depth == 0 && sig[at..].starts_with("->") => {
                    arrow = Some(at + 2);
                    break;
                }
                _ => {}
            }
        }
        let Some(at) = arrow else {
            continue;
        };
        let ret = sig[at..].split(" where ").next().unwrap_or("");
        let ret: String = ret.chars().filter(|c| !c.is_whitespace()).collect();
        if ret.starts_with("Result<") && ret.ends_with(",String>") {
            found.push((i + 1, sig.to_string()));
        }
    }
    found
}

#[test]
fn no_public_function_returns_a_string_error() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut v = Vec::new();
    let mut files = sources("");
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for (line, sig) in string_results(&text) {
            let name = file.strip_prefix(&src).unwrap_or(&file).display();
            v.push(format!("src/{name}:{line}: {sig}"));
        }
    }
    assert!(
        v.is_empty(),
        "public functions must return cuzk_actors::EngineError, not String:\n{}",
        v.join("\n")
    );
}

#[test]
fn the_string_error_check_finds_public_signatures_over_several_lines_and_only_those() {
    let lines =
        |text: &str| -> Vec<usize> { string_results(text).into_iter().map(|(l, _)| l).collect() };
    // Each of these is public and returns a String error.
    assert_eq!(lines("pub fn f() -> Result<(), String> {"), [1]);
    assert_eq!(
        lines("    pub fn f(&self) -> Result<Vec<u8>, String>;"),
        [1]
    );
    assert_eq!(
        lines("pub fn f(\n    a: u8,\n) -> Result<(u8, u8), String> {\n}"),
        [1]
    );
    assert_eq!(lines("pub async fn f() -> Result<u8,String> {"), [1]);
    assert_eq!(
        lines("x\npub fn f<T>(t: T) -> Result<T, String>\nwhere\n    T: Send,\n{"),
        [2]
    );
    // These are not.
    assert!(lines("pub(crate) fn f() -> Result<(), String> {").is_empty());
    assert!(lines("pub(super) fn f() -> Result<(), String> {").is_empty());
    assert!(lines("fn f() -> Result<(), String> {").is_empty());
    assert!(lines("pub fn f() -> Result<(), EngineError> {").is_empty());
    assert!(lines("pub fn f() -> Result<String, EngineError> {").is_empty());
    assert!(lines("pub fn f(g: impl Fn() -> Result<(), String>) -> u8 {").is_empty());
    assert_eq!(
        lines("pub fn f(g: impl Fn() -> Result<(), String>) -> Result<(), String> {"),
        [1]
    );
    assert!(lines("// pub fn f() -> Result<(), String> {").is_empty());
}
