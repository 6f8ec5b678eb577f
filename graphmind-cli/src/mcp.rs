//! `graphmind mcp` (the MCP server of `graphmind-mcp` on stdio) and `graphmind skill` (its
//! skill file for coding agents).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::control::HubArgs;

/// `graphmind mcp` arguments.
#[derive(Args, Debug)]
pub struct McpArgs {
    #[command(flatten)]
    hub: HubArgs,
}

/// `graphmind skill` arguments.
#[derive(Args, Debug)]
pub struct SkillArgs {
    /// Write it to .claude/skills/graphmind/SKILL.md under the current directory (where
    /// Claude Code reads project skills) instead of printing it.
    #[arg(long, conflicts_with = "out")]
    install: bool,
    /// Write it to this file instead of printing it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace a file that exists.
    #[arg(long)]
    force: bool,
}

/// Where `--install` writes the skill, under the current directory.
pub const SKILL_INSTALL_PATH: &str = ".claude/skills/graphmind/SKILL.md";

pub fn mcp(args: McpArgs) -> ExitCode {
    match graphmind_mcp::serve_stdio(args.hub.port) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("graphmind: {e}");
            ExitCode::from(1)
        }
    }
}

pub fn skill(args: SkillArgs) -> ExitCode {
    let target = match (args.install, args.out) {
        (true, _) => PathBuf::from(SKILL_INSTALL_PATH),
        (false, Some(p)) => p,
        (false, None) => {
            print!("{}", graphmind_mcp::SKILL);
            return ExitCode::SUCCESS;
        }
    };
    match write_skill(&target, args.force) {
        Ok(()) => {
            println!("wrote {}", target.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("graphmind: {e}");
            ExitCode::from(1)
        }
    }
}

fn write_skill(target: &Path, force: bool) -> Result<(), String> {
    if target.exists() && !force {
        return Err(format!("{} exists; --force replaces it", target.display()));
    }
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(target, graphmind_mcp::SKILL)
        .map_err(|e| format!("cannot write {}: {e}", target.display()))
}
