//! `graphmind`: the debugger hub (`graphmind serve`, over the `graphmind-hub` library), the
//! commands that control it and, with the `demo` feature (on by default), `graphmind demo`;
//! with the `mcp-proxy` feature (on by default), `graphmind mcp-proxy`.

mod browser;
mod control;
#[cfg(feature = "demo")]
mod demo;
#[cfg(feature = "demo")]
mod demo_openai;
mod export;
mod mcp;
#[cfg(feature = "mcp-proxy")]
mod mcp_proxy;
mod serve;
mod signals;
mod tui;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// graphmind — a live debugger for AI agents.
#[derive(Parser, Debug)]
#[command(name = "graphmind", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start the debugger hub: apps report to /ingest, the viewer is served on the same port.
    Serve(serve::ServeArgs),
    /// Start a hub, open the viewer and run the bundled support agent (pauses on its planted error).
    ///
    /// The demo's hub stores its runs as `graphmind serve` does, also with `--port 0` or
    /// `--auto`: in `$GRAPHMIND_HOME/graphmind.db` (default `~/.graphmind/graphmind.db`,
    /// or `--db PATH`), with its run file in `$GRAPHMIND_HOME/run/`. To leave `~/.graphmind`
    /// untouched, run it with `GRAPHMIND_HOME=$(mktemp -d)`.
    #[cfg(feature = "demo")]
    Demo(demo::DemoArgs),
    /// Run an MCP server over stdio behind graphmind: each tools/call, resources/read and
    /// prompts/get is gated (`graphmind mcp-proxy -- <server command> [args…]`).
    #[cfg(feature = "mcp-proxy")]
    McpProxy(mcp_proxy::McpProxyArgs),
    /// Export stored runs to an OpenTelemetry collector (OTLP/HTTP) or to a file.
    Export(export::ExportArgs),
    /// Serve MCP on stdio: a coding agent reads the runs of a running hub, waits for its
    /// pauses and resumes them (as `--allow-control` allows).
    Mcp(mcp::McpArgs),
    /// Print (or write with --install / --out) the SKILL.md that teaches a coding agent to
    /// debug with graphmind.
    Skill(mcp::SkillArgs),
    #[command(name = "tui")]
    Tui(tui::TuiArgs),
    /// Commands that talk to a running `graphmind serve`.
    #[command(flatten)]
    Control(control::ControlCommand),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            if !e.use_stderr() {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            eprintln!("{}", control::usage_line(&e));
            return ExitCode::from(1);
        }
    };
    match cli.command {
        Command::Serve(args) => serve::main(args),
        #[cfg(feature = "demo")]
        Command::Demo(args) => demo::main(args),
        #[cfg(feature = "mcp-proxy")]
        Command::McpProxy(args) => mcp_proxy::main(args),
        Command::Export(args) => export::main(args),
        Command::Mcp(args) => mcp::mcp(args),
        Command::Skill(args) => mcp::skill(args),
        Command::Tui(args) => tui::main(args),
        Command::Control(cmd) => control::main(cmd),
    }
}
