//! `graphmind mcp-proxy -- <server command>`: the thin command over
//! `graphmind_rmcp::proxy` (the logic lives there).

use std::process::ExitCode;

use graphmind_rmcp::proxy::{ProxyConfig, command_label, run_stdio};

/// `graphmind mcp-proxy`.
#[derive(clap::Args, Debug)]
pub struct McpProxyArgs {
    /// Do not hold tools their server marks destructive (destructiveHint: true) before they run
    /// (the default holds them while a debugger is attached; also
    /// GRAPHMIND_MCP_HOLD_DESTRUCTIVE=0).
    #[arg(long)]
    no_destructive_holds: bool,
    /// The MCP server's command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "SERVER COMMAND")]
    server: Vec<String>,
}

/// Relays this process's stdio to the server until both ends close; exits with the server's
/// exit code. Nothing but the server's own frames is written to stdout.
pub fn main(args: McpProxyArgs) -> ExitCode {
    let Some((command, rest)) = args.server.split_first() else {
        eprintln!("graphmind mcp-proxy: give the server's command after `--`");
        return ExitCode::from(2);
    };
    let mut holds = graphmind_rmcp::Config::from_env();
    if args.no_destructive_holds {
        holds = holds.hold_destructive(false);
    }
    let config = ProxyConfig {
        command: command.clone(),
        args: rest.to_vec(),
        holds,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("graphmind mcp-proxy: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(async move {
        let app = format!("mcp-proxy {}", command_label(&config.command, &config.args));
        let gm = graphmind::init(graphmind::Config::new(app));
        let out = run_stdio(config).await;
        gm.dispose().await;
        match out {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(e) => {
                eprintln!("graphmind mcp-proxy: could not run the server: {e}");
                ExitCode::from(1)
            }
        }
    });
    // The read of this process's stdin runs on a blocking thread that no one can interrupt:
    // do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    code
}
