//! `graphmind tui`: parse, then one call into the `graphmind-tui` library.

use std::process::ExitCode;

/// Watch runs and decide held calls in the terminal (keyboard first; works over SSH).
///
/// Finds the hub as the other commands do (`--port`, `GRAPHMIND_PORT`, port 4747, else the
/// one live hub of the run files) and acts with the agent token of its run file: what the
/// hub's `--allow-control` level forbids is shown unavailable, with why. Keys: ↑↓ select,
/// Enter open a run, Esc back, `/` filter, `h` decide the selected hold (c continue, s step,
/// r retry, i inject, e edit, x reject, a abort, m for this run; Enter confirms, Esc
/// cancels), Tab next hold, `t` run/step mode, `E` pause on error, `b` breakpoint before the
/// selected node, `B` clear breakpoints, `?` help, `q` or Ctrl-C quit. Inject and edit open
/// `$VISUAL` / `$EDITOR` (an inline editor without one). Honours `NO_COLOR`.
#[derive(clap::Args, Debug)]
pub struct TuiArgs {
    /// Port of the hub (default: `GRAPHMIND_PORT`, else 4747, else the one live hub of the
    /// run files).
    #[arg(long)]
    pub port: Option<u16>,
    /// Draw without colours (as `NO_COLOR=1`).
    #[arg(long)]
    pub no_color: bool,
}

/// Runs the terminal UI.
pub fn main(args: TuiArgs) -> ExitCode {
    match graphmind_tui::run(graphmind_tui::Options {
        port: args.port,
        no_color: args.no_color,
    }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("graphmind tui: {e}");
            ExitCode::from(1)
        }
    }
}
