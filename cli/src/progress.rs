//! Progress on long CLI work (indicatif): a bar over counted items (proofs, partitions) and a
//! spinner with the elapsed time for a phase whose progress cannot be observed from outside a
//! library call (a setup, a decode). Drawn on stderr, and only when stderr is a terminal: to a
//! pipe or a file they draw nothing (indicatif's hidden target), so what scripts and tests read
//! from stdout and stderr is unchanged. Lines printed to stdout while a bar is up go through
//! [`Progress::line`], which takes the bar off the screen for the line.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a spinner redraws on its own.
const TICK: Duration = Duration::from_millis(120);

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

fn style(template: &str) -> ProgressStyle {
    // The templates are constants; a bad one would fall back to indicatif's plain style.
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// A bar or spinner on stderr (hidden when stderr is not a terminal); cleared when dropped.
pub struct Progress(ProgressBar);

impl Progress {
    /// A bar over `n` items named `what` ("proofs").
    pub fn bar(n: u64, what: &str) -> Progress {
        let pb = ProgressBar::with_draw_target(Some(n), target());
        pb.set_style(style(
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} (eta {eta})",
        ));
        pb.set_message(what.to_string());
        pb.enable_steady_tick(Duration::from_secs(1));
        Progress(pb)
    }

    /// A spinner for the phase `phase`: its name and the elapsed time.
    pub fn spinner(phase: &str) -> Progress {
        let pb = ProgressBar::with_draw_target(None, target());
        pb.set_style(style("{spinner} {msg} [{elapsed_precise}]"));
        pb.set_message(phase.to_string());
        pb.enable_steady_tick(TICK);
        Progress(pb)
    }

    /// One more item done.
    pub fn inc(&self) {
        self.0.inc(1);
    }

    /// `n` items done.
    pub fn set_position(&self, n: u64) {
        self.0.set_position(n);
    }

    /// Prints `line` on stdout with the bar taken off the screen meanwhile.
    pub fn line(&self, line: &str) {
        self.0.suspend(|| println!("{line}"));
    }

    /// Runs `f` with the bar off the screen (for output printed by code that prints itself).
    pub fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        self.0.suspend(f)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Runs `f` under a spinner named `phase`, cleared when it returns.
pub fn phase<T>(phase: &str, f: impl FnOnce() -> T) -> T {
    let _s = Progress::spinner(phase);
    f()
}
