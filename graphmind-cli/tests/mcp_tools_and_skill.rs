//! What `graphmind mcp` offers, as the Python MCP SDK's stdio client lists it (every tool
//! with a description and a JSON Schema for its arguments), and `graphmind skill`: its front
//! matter is valid, every command and flag it names exists in `--help`, and it names every
//! MCP tool and no other.

mod mcp_client;
mod support;

use std::collections::BTreeSet;
use std::process::Command;

use mcp_client::McpClient;
use serde_json::{Value, json};
use support::*;

const TOOLS: [&str; 10] = [
    "clear_breakpoints",
    "get_execution",
    "get_run",
    "list_breakpoints",
    "list_pauses",
    "list_runs",
    "resume_pause",
    "set_breakpoint",
    "set_mode",
    "wait_for_pause",
];

fn listed_tools() -> Vec<Value> {
    let dir = TempDir::new("mcp-tools");
    // No hub needed to list the tools.
    let mut mcp = McpClient::start(&dir.0, free_port(), "tools-test");
    mcp.tools()
}

#[test]
fn every_tool_is_listed_with_a_description_and_a_json_schema() {
    let tools = listed_tools();
    let names: BTreeSet<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, TOOLS.into_iter().collect());
    for t in &tools {
        let name = t["name"].as_str().unwrap_or("?");
        let d = t["description"].as_str().unwrap_or("");
        assert!(d.len() > 40, "{name}: {d:?}");
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], json!("object"), "{name}: {schema}");
        // Every argument is described.
        for (arg, s) in schema["properties"].as_object().into_iter().flatten() {
            let text = s.to_string();
            assert!(
                s.get("description").is_some() || text.contains("$ref"),
                "{name}.{arg}: {s}"
            );
        }
        // A tool that changes the hub says which --allow-control level it needs.
        if matches!(
            name,
            "resume_pause" | "set_breakpoint" | "clear_breakpoints" | "set_mode"
        ) {
            assert!(d.contains("--allow-control resume"), "{name}: {d}");
        }
    }
    let resume = tools
        .iter()
        .find(|t| t["name"] == "resume_pause")
        .expect("resume_pause");
    let schema = resume["inputSchema"].to_string();
    for action in ["continue", "step", "retry", "inject", "abort", "reject"] {
        assert!(
            schema.contains(&format!("\"{action}\"")),
            "{action}: {schema}"
        );
    }
    let required: BTreeSet<&str> = resume["inputSchema"]["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(required, ["action", "pauseId"].into_iter().collect());
}

fn graphmind(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_graphmind"))
        .args(args)
        .output()
        .expect("run graphmind");
    assert!(out.status.success(), "graphmind {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The subcommands `graphmind --help` lists.
fn subcommands() -> BTreeSet<String> {
    let help = graphmind(&["--help"]);
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// The inline code spans and fenced code lines of a Markdown text.
fn code_of(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            out.push(line.split('#').next().unwrap_or("").trim().to_owned());
            continue;
        }
        out.extend(line.split('`').skip(1).step_by(2).map(str::to_owned));
    }
    out
}

#[test]
fn the_skill_has_valid_front_matter_and_names_only_commands_that_exist() {
    let skill = graphmind(&["skill"]);
    // Front matter: between the first two `---` lines, `name` and `description`.
    let mut parts = skill.splitn(3, "---\n");
    assert_eq!(parts.next(), Some(""), "the file starts with ---");
    let front = parts.next().expect("front matter");
    let body = parts.next().expect("a body after the front matter");
    let mut keys = std::collections::BTreeMap::new();
    for line in front.lines() {
        let (k, v) = line.split_once(": ").expect("key: value lines");
        assert!(keys.insert(k, v.trim()).is_none(), "{k} twice");
    }
    assert_eq!(
        keys.keys().copied().collect::<Vec<_>>(),
        ["description", "name"]
    );
    let name = keys["name"];
    assert_eq!(name, "graphmind");
    let description = keys["description"];
    assert!(
        (60..=1024).contains(&description.len()),
        "{}",
        description.len()
    );
    assert!(
        !description.contains(": "),
        "a plain YAML scalar: {description}"
    );
    assert!(body.contains("# graphmind"));

    // Every `graphmind <command> --flag` in the code exists, flags included.
    let commands = subcommands();
    let mut named = BTreeSet::new();
    for code in code_of(body) {
        let words: Vec<&str> = code.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "graphmind") else {
            continue;
        };
        let Some(sub) = words.get(at + 1) else {
            continue;
        };
        assert!(
            commands.contains(*sub),
            "graphmind {sub} (in `{code}`) is no command"
        );
        named.insert((*sub).to_owned());
        let help = graphmind(&[sub, "--help"]);
        for flag in words[at + 2..]
            .iter()
            .take_while(|w| **w != "--")
            .filter(|w| w.starts_with("--"))
        {
            let flag = flag.split('=').next().unwrap_or(flag);
            assert!(
                help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
                "graphmind {sub} has no {flag} (in `{code}`)"
            );
        }
    }
    for sub in ["serve", "wait", "resume", "break", "replay", "mcp"] {
        assert!(
            named.contains(sub),
            "the skill names graphmind {sub}: {named:?}"
        );
    }

    // It names every MCP tool, and every tool-like name in its code is one.
    let tools: BTreeSet<&str> = TOOLS.into_iter().collect();
    for t in TOOLS {
        assert!(body.contains(&format!("`{t}`")), "the skill names {t}");
    }
    for code in code_of(body) {
        let ident = code.split_whitespace().next().unwrap_or("");
        let tool_like = code == ident
            && ident.contains('_')
            && ident.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            && ["list_", "get_", "set_", "clear_", "wait_", "resume_"]
                .iter()
                .any(|p| ident.starts_with(p));
        assert!(
            !tool_like || tools.contains(ident),
            "`{ident}` is no MCP tool"
        );
    }
    // The tools the server lists are the ones named here.
    let listed: BTreeSet<String> = listed_tools()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(listed, tools.iter().map(|t| (*t).to_owned()).collect());
}

#[test]
fn skill_install_writes_the_file_and_keeps_an_existing_one_without_force() {
    let dir = TempDir::new("mcp-skill");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_graphmind"))
            .args(args)
            .current_dir(&dir.0)
            .output()
            .expect("run graphmind skill")
    };
    let out = run(&["skill", "--install"]);
    assert!(out.status.success(), "{out:?}");
    let path = dir.0.join(".claude/skills/graphmind/SKILL.md");
    let written = std::fs::read_to_string(&path).expect("written");
    assert_eq!(written, graphmind(&["skill"]));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "wrote .claude/skills/graphmind/SKILL.md"
    );

    std::fs::write(&path, "mine").expect("overwrite");
    let out = run(&["skill", "--install"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exists; --force replaces it"),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(&path).expect("kept"), "mine");
    assert!(run(&["skill", "--install", "--force"]).status.success());
    assert_eq!(std::fs::read_to_string(&path).expect("replaced"), written);

    let out = run(&["skill", "--out", "agents/SKILL.md"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dir.0.join("agents/SKILL.md")).expect("--out"),
        written
    );
}
