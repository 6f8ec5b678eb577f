//! `graphmind replay` and `graphmind diff`: re-run an app against a recorded run (the app's
//! own runtime answers its calls from the recording, see `GRAPHMIND_REPLAY` in the
//! graphmind crate), and compare two runs node by node.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use graphmind_protocol::recording::{Recording, Step, first_diff};

use super::*;

/// A recording on disk: a file the user named, or a run fetched from the hub into a
/// temporary file (removed on drop).
struct Source {
    path: PathBuf,
    temporary: bool,
    /// The hub it was fetched from.
    port: Option<u16>,
}

impl Drop for Source {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `run.ndjson` as it is, or the run `run_…` fetched from the hub as `graphmind record` does.
fn fetch(port: Option<u16>, source: &str) -> Result<Source, Fail> {
    let as_file = Path::new(source);
    if as_file.is_file() {
        return Ok(Source {
            path: as_file.to_owned(),
            temporary: false,
            port: None,
        });
    }
    let h = TargetHub::locate(port)?;
    let safe: String = source
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let path = std::env::temp_dir().join(format!(
        "graphmind-replay-{safe}-{}-{}.ndjson",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let src = Source {
        path,
        temporary: true,
        port: Some(h.port),
    };
    record(&h, source, Some(&src.path))?;
    Ok(src)
}

fn load(src: &Source) -> Result<Recording, Fail> {
    let text = std::fs::read_to_string(&src.path).map_err(|e| {
        Fail::new(
            Exit::Usage,
            format!("cannot read {}: {e}", src.path.display()),
        )
    })?;
    Recording::parse(&text, None)
        .map_err(|e| Fail::new(Exit::Usage, format!("{}: {e}", src.path.display())))
}

/// What `graphmind replay` was asked.
pub(super) struct ReplayArgs<'a> {
    pub(super) port: Option<u16>,
    pub(super) source: &'a str,
    pub(super) until: Option<&'a str>,
    pub(super) on_diverge: &'a str,
    pub(super) hold: bool,
    pub(super) command: &'a [String],
}

/// Runs the app command with the replay environment set; its exit code is the command's.
pub(super) fn replay(args: &ReplayArgs<'_>) -> Result<ExitCode, Fail> {
    let Some((program, rest)) = args.command.split_first() else {
        return Err(Fail::new(
            Exit::Usage,
            "name the command that starts the app after `--`",
        ));
    };
    let src = fetch(args.port, args.source)?;
    let rec = load(&src)?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest)
        .env("GRAPHMIND_REPLAY", &src.path)
        .env("GRAPHMIND_REPLAY_ON_DIVERGE", args.on_diverge);
    if let Some(u) = args.until {
        cmd.env("GRAPHMIND_REPLAY_UNTIL", u);
    }
    if args.hold {
        cmd.env("GRAPHMIND_REPLAY_HOLD", "1");
    }
    // The replayed run reports to the hub the recording came from.
    if let Some(port) = src.port
        && std::env::var_os("GRAPHMIND_URL").is_none()
    {
        cmd.env("GRAPHMIND_URL", format!("ws://127.0.0.1:{port}/ingest"));
    }
    eprintln!(
        "graphmind: replaying {} ({} steps{}) with {}",
        rec.run_id,
        rec.steps.len(),
        args.until
            .map_or_else(String::new, |u| format!(", live from {u}")),
        args.command.join(" ")
    );
    let status = cmd
        .status()
        .map_err(|e| Fail::new(Exit::Usage, format!("cannot start {program}: {e}")))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    })
}

/// One node's differences between two runs.
#[derive(Debug, Default, PartialEq)]
pub(super) struct NodeDiff {
    pub(super) count_a: usize,
    pub(super) count_b: usize,
    pub(super) inputs: usize,
    pub(super) outputs: usize,
    /// The first difference of this node, as a line.
    pub(super) first: Option<String>,
}

/// What differs between runs `a` and `b`: the first divergence (in `a`'s order) and the
/// differences per node. Executions are paired as a replay pairs them: by node, each with the
/// first execution of `b` not yet paired whose input equals its own (concurrent calls that
/// started in another order), else with the first not yet paired.
pub(super) fn compare(
    a: &Recording,
    b: &Recording,
) -> (Option<String>, BTreeMap<String, NodeDiff>) {
    let mut nodes: BTreeMap<String, NodeDiff> = BTreeMap::new();
    let mut by_node: BTreeMap<&str, Vec<&Step>> = BTreeMap::new();
    for s in &b.steps {
        by_node.entry(&s.node_id).or_default().push(s);
        nodes.entry(s.node_id.clone()).or_default().count_b += 1;
    }
    let mut taken: BTreeMap<&str, Vec<bool>> = BTreeMap::new();
    let mut first: Option<String> = None;
    for s in &a.steps {
        let n = nodes.entry(s.node_id.clone()).or_default();
        n.count_a += 1;
        let candidates = by_node
            .get(s.node_id.as_str())
            .map_or(&[][..], Vec::as_slice);
        let used = taken
            .entry(&s.node_id)
            .or_insert_with(|| vec![false; candidates.len()]);
        let null = Value::Null;
        let same_input = |o: &Step| {
            first_diff(
                s.input.as_ref().unwrap_or(&null),
                o.input.as_ref().unwrap_or(&null),
            )
            .is_none()
        };
        let pick = (0..candidates.len())
            .filter(|&i| !used[i])
            .find(|&i| same_input(candidates[i]))
            .or_else(|| (0..candidates.len()).find(|&i| !used[i]));
        let other = pick.map(|i| {
            used[i] = true;
            candidates[i]
        });
        let line = match other {
            None => Some(format!(
                "step {} ({} `{}`) is only in {}",
                s.index, s.node_id, s.name, a.run_id
            )),
            Some(o) => {
                let field = |what: &str, x: &Option<Value>, y: &Option<Value>| {
                    let (x, y) = (
                        x.clone().unwrap_or(Value::Null),
                        y.clone().unwrap_or(Value::Null),
                    );
                    first_diff(&x, &y).map(|d| {
                        let show = |v: &Option<Value>| {
                            v.as_ref()
                                .map_or_else(|| "(absent)".to_owned(), Value::to_string)
                        };
                        format!(
                            "step {} ({} `{}`): {what} {} is {} in {} but {} in {} (its step {})",
                            s.index,
                            s.node_id,
                            s.name,
                            d.path,
                            show(&d.left),
                            a.run_id,
                            show(&d.right),
                            b.run_id,
                            o.index
                        )
                    })
                };
                let input = field("input", &s.input, &o.input);
                let output = if s.status == o.status {
                    field("output", &s.output, &o.output)
                } else {
                    Some(format!(
                        "step {} ({} `{}`): status {} in {} but {} in {}",
                        s.index, s.node_id, s.name, s.status, a.run_id, o.status, b.run_id
                    ))
                };
                n.inputs += usize::from(input.is_some());
                n.outputs += usize::from(output.is_some());
                input.or(output)
            }
        };
        if let Some(l) = line {
            n.first.get_or_insert_with(|| l.clone());
            first.get_or_insert(l);
        }
    }
    if first.is_none() {
        first = nodes
            .iter()
            .find(|(_, n)| n.count_b > n.count_a)
            .map(|(id, n)| {
                format!(
                    "{} has {} more execution(s) of {id}",
                    b.run_id,
                    n.count_b - n.count_a
                )
            });
    }
    (first, nodes)
}

/// What `graphmind diff` exits with, like `diff(1)`: 0 when the runs match, 1 when they
/// differ, 2 when they could not be compared (a run not found, no hub, an unreadable file).
pub(super) mod diff_exit {
    /// The runs match.
    pub(in super::super) const SAME: u8 = 0;
    /// The runs differ.
    pub(in super::super) const DIFFER: u8 = 1;
    /// They could not be compared.
    pub(in super::super) const TROUBLE: u8 = 2;
}

/// `graphmind diff <runA> <runB>`: `Ok(true)` when the runs differ.
pub(super) fn diff(port: Option<u16>, a: &str, b: &str, as_json: bool) -> Result<bool, Fail> {
    let (ra, rb) = (load(&fetch(port, a)?)?, load(&fetch(port, b)?)?);
    let (first, nodes) = compare(&ra, &rb);
    let differ = first.is_some();
    if as_json {
        let nodes: Vec<Value> = nodes
            .iter()
            .map(|(id, n)| {
                json!({"nodeId": id, "countA": n.count_a, "countB": n.count_b,
                    "inputsDiffer": n.inputs, "outputsDiffer": n.outputs, "first": n.first})
            })
            .collect();
        return print_json(
            &json!({"runA": ra.run_id, "runB": rb.run_id, "firstDivergence": first, "nodes": nodes}),
        )
        .map(|()| differ);
    }
    let mut out = String::new();
    match &first {
        Some(l) => {
            let _ = writeln!(out, "first divergence: {}", one_line(l));
        }
        None => {
            let _ = writeln!(out, "no difference: {} and {} match", ra.run_id, rb.run_id);
        }
    }
    let _ = writeln!(
        out,
        "{:<28} {:>3} {:>3} {:>8} {:>9}  FIRST",
        "NODE", "A", "B", "INPUTS≠", "OUTPUTS≠"
    );
    for (id, n) in &nodes {
        let _ = writeln!(
            out,
            "{id:<28} {:>3} {:>3} {:>8} {:>9}  {}",
            n.count_a,
            n.count_b,
            n.inputs,
            n.outputs,
            n.first.as_deref().map_or("-".into(), one_line)
        );
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(io_fail)?;
    Ok(differ)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(run: &str, second_input: &str) -> Recording {
        let text = format!(
            r#"{{"type":"node.started","runId":"{run}","payload":{{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"1","input":{{"q":"x"}}}}}}
{{"type":"node.finished","runId":"{run}","payload":{{"nodeId":"tool:a","instanceId":"1","status":"ok","output":1}}}}
{{"type":"node.started","runId":"{run}","payload":{{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"2","input":{{"q":"{second_input}"}}}}}}
{{"type":"node.finished","runId":"{run}","payload":{{"nodeId":"tool:a","instanceId":"2","status":"ok","output":2}}}}"#
        );
        Recording::parse(&text, None).expect("parses")
    }

    #[test]
    fn diff_names_the_first_divergence_and_counts_per_node() {
        let (first, nodes) = compare(&rec("run_a", "y"), &rec("run_b", "z"));
        assert_eq!(
            first.as_deref(),
            Some(r#"step 2 (tool:a `a`): input $.q is "y" in run_a but "z" in run_b (its step 2)"#)
        );
        let n = &nodes["tool:a"];
        assert_eq!((n.count_a, n.count_b, n.inputs, n.outputs), (2, 2, 1, 0));
        let (first, _) = compare(&rec("run_a", "y"), &rec("run_b", "y"));
        assert_eq!(first, None);
    }

    #[test]
    fn concurrent_calls_in_another_order_are_paired_by_input_not_reported_as_differing() {
        let text = |run: &str, order: [(&str, i32); 2]| {
            order
                .iter()
                .enumerate()
                .map(|(i, (q, out))| {
                    format!(
                        r#"{{"type":"node.started","runId":"{run}","payload":{{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"{i}","input":{{"q":"{q}"}}}}}}
{{"type":"node.finished","runId":"{run}","payload":{{"nodeId":"tool:a","instanceId":"{i}","status":"ok","output":{out}}}}}
"#
                    )
                })
                .collect::<String>()
        };
        let a = Recording::parse(&text("run_a", [("x", 1), ("y", 2)]), None).expect("parses");
        let b = Recording::parse(&text("run_b", [("y", 2), ("x", 1)]), None).expect("parses");
        let (first, nodes) = compare(&a, &b);
        assert_eq!(first, None);
        assert_eq!(
            nodes["tool:a"],
            NodeDiff {
                count_a: 2,
                count_b: 2,
                ..NodeDiff::default()
            }
        );
        // Swapped inputs with swapped outputs still differ, at the output.
        let c = Recording::parse(&text("run_c", [("y", 1), ("x", 2)]), None).expect("parses");
        let (first, _) = compare(&a, &c);
        assert_eq!(
            first.as_deref(),
            Some("step 1 (tool:a `a`): output $ is 1 in run_a but 2 in run_c (its step 2)")
        );
    }
}
