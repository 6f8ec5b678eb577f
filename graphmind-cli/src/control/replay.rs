//! `graphmind replay` and `graphmind diff`: re-run an app against a recorded run (the app's
//! own runtime answers its calls from the recording, see `GRAPHMIND_REPLAY` in the
//! graphmind crate), and compare two runs node by node.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use graphmind_protocol::recording::{
    Recording, SHOWN_JSON_BYTES, ShownJson, Step, first_diff, shown_json,
};

use super::*;
use crate::signals::StopSignals;

/// A recording: a file the user named, or a run fetched from the hub (kept in memory).
enum Source {
    /// `graphmind record`'s file, as it is.
    File(PathBuf),
    /// A run fetched from the hub on `port`, as `graphmind record` writes it.
    Fetched { text: Vec<u8>, port: u16 },
}

/// `run.ndjson` as it is, or the run `run_…` fetched from the hub as `graphmind record` does.
fn fetch(port: Option<u16>, source: &str) -> Result<Source, Fail> {
    let as_file = Path::new(source);
    if as_file.is_file() {
        return Ok(Source::File(as_file.to_owned()));
    }
    let h = TargetHub::locate(port)?;
    let mut text = Vec::new();
    record_into(&h, source, &mut text)?;
    Ok(Source::Fetched { text, port: h.port })
}

fn load(src: &Source) -> Result<Recording, Fail> {
    match src {
        Source::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Fail::new(Exit::Usage, format!("cannot read {}: {e}", path.display()))
            })?;
            Recording::parse(&text, None)
                .map_err(|e| Fail::new(Exit::Usage, format!("{}: {e}", path.display())))
        }
        Source::Fetched { text, .. } => {
            let text = std::str::from_utf8(text)
                .map_err(|e| Fail::new(Exit::Unreachable, format!("the run is not UTF-8: {e}")))?;
            Recording::parse(text, None).map_err(|e| Fail::new(Exit::Usage, e.to_string()))
        }
    }
}

/// The replayed app's private directory: a new directory only this user may enter (0700),
/// holding a fetched recording (mode 0600; it holds every recorded input and output, API
/// keys included) and the summary the app's replayer keeps there
/// (`GRAPHMIND_REPLAY_SUMMARY`); removed with what it holds when this is dropped (the command
/// ends, fails, or is stopped by a signal).
struct PrivateCopy {
    dir: PathBuf,
    /// The fetched recording, when the recording was fetched (a file the user named is
    /// handed over as it is).
    file: Option<PathBuf>,
}

impl PrivateCopy {
    /// Makes a new private directory under the temporary directory and writes `text` (a
    /// fetched recording) into it. The directory is created, never reused: a name someone
    /// else took (a directory or a symlink planted in `/tmp`) is skipped.
    fn write(text: Option<&[u8]>) -> Result<Self, Fail> {
        let fail = |what: &str, p: &Path, e: std::io::Error| {
            Fail::new(Exit::Usage, format!("cannot {what} {}: {e}", p.display()))
        };
        let base = std::env::temp_dir();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut attempt = 0u32;
        let dir = loop {
            let dir = base.join(format!(
                "graphmind-replay-{}-{stamp:x}-{attempt}",
                std::process::id()
            ));
            let mut b = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            match b.create(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(e) => return Err(fail("create the directory", &dir, e)),
            }
        };
        let mut copy = Self { dir, file: None };
        let Some(text) = text else {
            return Ok(copy);
        };
        let file = copy.dir.join("recording.ndjson");
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        let mut f = o.open(&file).map_err(|e| fail("create", &file, e))?;
        copy.file = Some(file.clone());
        f.write_all(text)
            .and_then(|()| f.flush())
            .map_err(|e| fail("write", &file, e))?;
        Ok(copy)
    }

    /// Where the app's replayer keeps its summary.
    fn summary(&self) -> PathBuf {
        self.dir.join("summary.json")
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            let _ = std::fs::remove_file(file);
        }
        let summary = self.summary();
        let _ = std::fs::remove_file(summary.with_extension("tmp"));
        let _ = std::fs::remove_file(summary);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// What the replayed app's summary says (`GRAPHMIND_REPLAY_SUMMARY`, kept by its replayer).
#[derive(Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Summary {
    recorded_steps: usize,
    served: usize,
    live: usize,
    unanswered: usize,
    diverged: usize,
    failed: usize,
    problems: Vec<String>,
}

impl Summary {
    /// Whether every call was answered as recorded: nothing the recording could not answer,
    /// no divergence, no answer the app failed on. Calls at and after a fork point
    /// (`--until`) run live as asked.
    fn whole(&self) -> bool {
        self.unanswered == 0 && self.diverged == 0 && self.failed == 0
    }

    /// The lines `graphmind replay` prints at the end.
    fn lines(&self, run: &str) -> Vec<String> {
        let mut lines = vec![format!(
            "graphmind: replay of {run}: {} served, {} went live ({} the recording could not answer), {} diverged, {} failed after a recorded answer",
            self.served, self.live, self.unanswered, self.diverged, self.failed
        )];
        lines.extend(self.problems.iter().map(|p| format!("  {p}")));
        if !self.whole() {
            lines.push(
                "graphmind: the replay was not whole: some calls were not answered as recorded"
                    .to_owned(),
            );
        }
        lines
    }
}

/// What `graphmind replay` says and exits with once the app ended with `app`: the app's own
/// failure first; else 1 when the replay was not whole (the summary says so) or cannot be
/// known (the app wrote no summary: it made no tool call or model step, or its graphmind
/// predates summaries); else 0.
fn conclude(summary: Option<&str>, run: &str, app: Option<i32>) -> (Vec<String>, ExitCode) {
    let parsed = summary.and_then(|t| serde_json::from_str::<Summary>(t).ok());
    let (lines, whole) = match parsed {
        Some(s) => (s.lines(run), s.whole()),
        None => (
            vec![format!(
                "graphmind: the app reported no replay of {run} (it made no tool call or model step, or its graphmind does not write GRAPHMIND_REPLAY_SUMMARY): whether anything ran live is unknown"
            )],
            false,
        ),
    };
    let code = match app {
        Some(0) if !whole => Some(1),
        other => other,
    };
    (lines, exit_code(code))
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

/// The most node names an error lists.
const NAMES_LISTED: usize = 20;

/// Refuses a fork point the recording does not have (the app would silently replay every
/// step): a step number outside 1..=steps, a negative or malformed step, a node no step has.
fn check_until(rec: &Recording, until: &str) -> Result<(), Fail> {
    let t = until.trim();
    let steps = rec.steps.len();
    let num = t.strip_prefix("step").map_or(t, str::trim);
    let step = num.parse::<usize>().ok();
    if step.is_some_and(|n| (1..=steps).contains(&n))
        || (step.is_none() && !t.is_empty())
            && rec.steps.iter().any(|s| s.node_id == t || s.name == t)
    {
        return Ok(());
    }
    let mut nodes: Vec<String> = Vec::new();
    for s in &rec.steps {
        let shown = if s.name.is_empty() || s.name == s.node_id {
            s.node_id.clone()
        } else {
            format!("{} ({})", s.node_id, s.name)
        };
        if !nodes.contains(&shown) {
            nodes.push(shown);
        }
    }
    let more = nodes.len().saturating_sub(NAMES_LISTED);
    nodes.truncate(NAMES_LISTED);
    let mut listed = nodes.join(", ");
    if more > 0 {
        let _ = write!(listed, " and {more} more");
    }
    let run = &rec.run_id;
    let what = match step {
        Some(n) => format!("{run} has no step {n}"),
        None if num.parse::<i64>().is_ok() || t.starts_with("step") || t.is_empty() => {
            "is not a step number".to_owned()
        }
        None => "names no node of the recording".to_owned(),
    };
    Err(Fail::new(
        Exit::Usage,
        format!(
            "--until {t:?}: {what}: give a step from 1 to {steps} or a node of {run}: {listed}"
        ),
    ))
}

/// Runs the app command with the replay environment set; its exit code is the command's.
/// A stop signal (SIGINT, SIGTERM, SIGHUP) removes the fetched recording at once, reaches the
/// app too (forwarded after a second, when the app has not ended by itself: from a terminal it
/// got the signal already), and replay exits with the shell's status for that signal once the
/// app has ended.
pub(super) fn replay(args: &ReplayArgs<'_>) -> Result<ExitCode, Fail> {
    let Some((program, rest)) = args.command.split_first() else {
        return Err(Fail::new(
            Exit::Usage,
            "name the command that starts the app after `--`",
        ));
    };
    let src = fetch(args.port, args.source)?;
    let rec = load(&src)?;
    if let Some(u) = args.until {
        check_until(&rec, u)?;
    }
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest)
        .env("GRAPHMIND_REPLAY_ON_DIVERGE", args.on_diverge);
    if let Some(u) = args.until {
        cmd.env("GRAPHMIND_REPLAY_UNTIL", u);
    }
    if args.hold {
        cmd.env("GRAPHMIND_REPLAY_HOLD", "1");
    }
    // The replayed run reports to the hub the recording came from.
    if let Source::Fetched { port, .. } = &src
        && std::env::var_os("GRAPHMIND_URL").is_none()
    {
        cmd.env("GRAPHMIND_URL", format!("ws://127.0.0.1:{port}/ingest"));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Fail::new(Exit::Usage, format!("cannot start: {e}")))?;
    rt.block_on(async {
        // Listening before the copy exists: no signal can leave it behind.
        let mut stops = StopSignals::install();
        let copy = match &src {
            Source::File(path) => {
                cmd.env("GRAPHMIND_REPLAY", path);
                PrivateCopy::write(None)?
            }
            Source::Fetched { text, .. } => {
                let copy = PrivateCopy::write(Some(text))?;
                if let Some(file) = &copy.file {
                    cmd.env("GRAPHMIND_REPLAY", file);
                }
                copy
            }
        };
        cmd.env("GRAPHMIND_REPLAY_SUMMARY", copy.summary());
        drop(src);
        let run = rec.run_id.clone();
        eprintln!(
            "graphmind: replaying {} ({} steps{}) with {}",
            rec.run_id,
            rec.steps.len(),
            args.until
                .map_or_else(String::new, |u| format!(", live from {u}")),
            args.command.join(" ")
        );
        drop(rec);
        let mut child = cmd
            .spawn()
            .map_err(|e| Fail::new(Exit::Usage, format!("cannot start {program}: {e}")))?;
        let pid = child.id();
        let (tx, mut ended) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let stop = tokio::select! {
            status = &mut ended => {
                let summary = std::fs::read_to_string(copy.summary()).ok();
                drop(copy);
                let app = status.ok().and_then(Result::ok).and_then(|s| s.code());
                let (lines, code) = conclude(summary.as_deref(), &run, app);
                for line in lines {
                    eprintln!("{line}");
                }
                return Ok(code);
            }
            stop = stops.recv() => stop,
        };
        drop(copy);
        let forwarded = tokio::time::sleep(std::time::Duration::from_secs(1));
        tokio::pin!(forwarded);
        let mut signalled = false;
        loop {
            tokio::select! {
                _ = &mut ended => break,
                () = &mut forwarded, if !signalled => {
                    signalled = true;
                    send_signal(pid, stop.name().trim_start_matches("SIG"));
                }
                _ = stops.recv() => send_signal(pid, "KILL"),
            }
        }
        Ok(ExitCode::from(stop.exit_code()))
    })
}

/// Sends signal `name` (`INT`, `KILL`) to process `pid` with kill(1) (the workspace has no
/// unsafe code, and the standard library only sends SIGKILL, to a `Child` it still holds).
fn send_signal(pid: u32, name: &str) {
    #[cfg(unix)]
    let _ = std::process::Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    #[cfg(not(unix))]
    let _ = (pid, name);
}

/// The command's exit code (`None`: killed by a signal) as replay's.
fn exit_code(code: Option<i32>) -> ExitCode {
    match code {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    }
}

/// A value of a `graphmind diff` line: cut to [`SHOWN_JSON_BYTES`] bytes of JSON.
fn shown(v: Option<&Value>) -> ShownJson {
    v.map_or_else(
        || ShownJson {
            text: "(absent)".to_owned(),
            len: 0,
            cut: false,
        },
        |v| shown_json(v, SHOWN_JSON_BYTES),
    )
}

/// One difference of two runs: `long`, one line with values cut to [`SHOWN_JSON_BYTES`]
/// bytes (the JSON output), and `short`, a headline and `-`/`+` lines with short values (the
/// text output, read like `diff`).
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Divergence {
    pub(super) long: String,
    pub(super) short: Vec<String>,
}

/// One node's differences between two runs.
#[derive(Debug, Default, PartialEq)]
pub(super) struct NodeDiff {
    pub(super) count_a: usize,
    pub(super) count_b: usize,
    pub(super) inputs: usize,
    pub(super) outputs: usize,
    /// The first difference of this node.
    pub(super) first: Option<Divergence>,
}

/// The most characters of a value on a `-`/`+` line of the text output.
const SHORT_VALUE: usize = 72;

fn short(v: Option<&Value>) -> String {
    let t = shown(v).text;
    if t.chars().count() > SHORT_VALUE {
        let cut: String = t.chars().take(SHORT_VALUE).collect();
        format!("{cut}…")
    } else {
        t
    }
}

/// Ids a provider or SDK mints for a tool call (`call_id`, `tool_call_id`, `callId`,
/// `toolCallId`): they differ in every run, so they are no input difference.
const MINTED_KEYS: [&str; 4] = ["call_id", "tool_call_id", "callId", "toolCallId"];

/// `v` without the [`MINTED_KEYS`] fields, at any depth.
fn without_minted(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !MINTED_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), without_minted(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_minted).collect()),
        other => other.clone(),
    }
}

/// Which steps of run `run_id` in `text` finished with an injected result (`node.finished`
/// with `injected: true`), by step (in start order, as [`Recording::parse`] numbers them).
fn injected_steps(text: &str, run_id: &str) -> Vec<bool> {
    let mut flags = Vec::new();
    let mut open: BTreeMap<(String, String), std::collections::VecDeque<usize>> = BTreeMap::new();
    for line in text.lines() {
        let Ok(e) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        if e["runId"].as_str() != Some(run_id) {
            continue;
        }
        let p = &e["payload"];
        let key = (
            p["instanceId"].as_str().unwrap_or("").to_owned(),
            p["nodeId"].as_str().unwrap_or("").to_owned(),
        );
        match e["type"].as_str() {
            Some("node.started") if p["kind"] != "agent" => {
                open.entry(key).or_default().push_back(flags.len());
                flags.push(false);
            }
            Some("node.finished") => {
                if let Some(at) = open
                    .get_mut(&key)
                    .and_then(std::collections::VecDeque::pop_front)
                {
                    flags[at] = p["injected"] == json!(true);
                }
            }
            _ => {}
        }
    }
    flags
}

/// A recording and, per step, whether its result was injected.
pub(super) struct Compared {
    pub(super) rec: Recording,
    pub(super) injected: Vec<bool>,
}

impl Compared {
    fn injected(&self, s: &Step) -> bool {
        self.injected.get(s.index - 1).copied().unwrap_or(false)
    }
}

/// What differs between runs `a` and `b`: the first divergence (in `a`'s order) and the
/// differences per node. Executions are paired as a replay pairs them: by node, each with the
/// first execution of `b` not yet paired whose input equals its own (concurrent calls that
/// started in another order), else with the first not yet paired. Inputs are compared without
/// the ids a provider mints for tool calls ([`MINTED_KEYS`]).
pub(super) fn compare(
    ca: &Compared,
    cb: &Compared,
) -> (Option<Divergence>, BTreeMap<String, NodeDiff>) {
    let (a, b) = (&ca.rec, &cb.rec);
    let mut nodes: BTreeMap<String, NodeDiff> = BTreeMap::new();
    let mut by_node: BTreeMap<&str, Vec<&Step>> = BTreeMap::new();
    for s in &b.steps {
        by_node.entry(&s.node_id).or_default().push(s);
        nodes.entry(s.node_id.clone()).or_default().count_b += 1;
    }
    let mut taken: BTreeMap<&str, Vec<bool>> = BTreeMap::new();
    let mut first: Option<Divergence> = None;
    let input_of = |s: &Step| without_minted(s.input.as_ref().unwrap_or(&Value::Null));
    for s in &a.steps {
        let n = nodes.entry(s.node_id.clone()).or_default();
        n.count_a += 1;
        let candidates = by_node
            .get(s.node_id.as_str())
            .map_or(&[][..], Vec::as_slice);
        let used = taken
            .entry(&s.node_id)
            .or_insert_with(|| vec![false; candidates.len()]);
        let mine = input_of(s);
        let same_input = |o: &Step| first_diff(&mine, &input_of(o)).is_none();
        let pick = (0..candidates.len())
            .filter(|&i| !used[i])
            .find(|&i| same_input(candidates[i]))
            .or_else(|| (0..candidates.len()).find(|&i| !used[i]));
        let other = pick.map(|i| {
            used[i] = true;
            candidates[i]
        });
        let head = format!("step {} ({} `{}`)", s.index, s.node_id, s.name);
        let line = match other {
            None => {
                let l = format!("{head} is only in {}", a.run_id);
                Some(Divergence {
                    long: l.clone(),
                    short: vec![l],
                })
            }
            Some(o) => {
                let field = |what: &str, x: &Value, y: &Value| {
                    first_diff(x, y).map(|d| {
                        let (l, r) = (shown(d.left.as_ref()), shown(d.right.as_ref()));
                        let mut long = format!(
                            "{head}: {what} {} is {} in {} but {} in {} (its step {})",
                            d.path, l.text, a.run_id, r.text, b.run_id, o.index
                        );
                        if l.cut || r.cut {
                            let _ = write!(
                                long,
                                " (values cut to {SHOWN_JSON_BYTES} bytes of JSON; {} bytes in {}, {} bytes in {})",
                                l.len, a.run_id, r.len, b.run_id
                            );
                        }
                        Divergence {
                            long,
                            short: vec![
                                format!("{head}: {what} {}", d.path),
                                format!("- {}", short(d.left.as_ref())),
                                format!("+ {}", short(d.right.as_ref())),
                            ],
                        }
                    })
                };
                let null = Value::Null;
                let input = field("input", &mine, &input_of(o));
                let output = if s.status == o.status {
                    field(
                        "output",
                        s.output.as_ref().unwrap_or(&null),
                        o.output.as_ref().unwrap_or(&null),
                    )
                } else {
                    // An injected result says so: "ok vs error" alone reads like a fix.
                    let status = |st: &Step, c: &Compared| {
                        if c.injected(st) {
                            format!("{} (injected)", st.status)
                        } else {
                            st.status.clone()
                        }
                    };
                    let (sa, sb) = (status(s, ca), status(o, cb));
                    Some(Divergence {
                        long: format!(
                            "{head}: status {sa} in {} but {sb} in {}",
                            a.run_id, b.run_id
                        ),
                        short: vec![
                            format!("{head}: status"),
                            format!("- {sa}"),
                            format!("+ {sb}"),
                        ],
                    })
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
                let l = format!(
                    "{} has {} more execution(s) of {id}",
                    b.run_id,
                    n.count_b - n.count_a
                );
                Divergence {
                    long: l.clone(),
                    short: vec![l],
                }
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

/// A recording with its steps' injected flags.
fn compared(src: &Source) -> Result<Compared, Fail> {
    let rec = load(src)?;
    let text = match src {
        Source::File(path) => std::fs::read_to_string(path).unwrap_or_default(),
        Source::Fetched { text, .. } => String::from_utf8_lossy(text).into_owned(),
    };
    let injected = injected_steps(&text, &rec.run_id);
    Ok(Compared { rec, injected })
}

/// The most characters of a node id on a stat row.
const NODE_WIDTH: usize = 32;

/// `graphmind diff <runA> <runB>`: `Ok(true)` when the runs differ. The text reads like
/// `diff` and `git diff --stat`: the runs, the first divergence with its `-`/`+` values, then
/// one short row per node.
pub(super) fn diff(port: Option<u16>, a: &str, b: &str, as_json: bool) -> Result<bool, Fail> {
    let (ca, cb) = (compared(&fetch(port, a)?)?, compared(&fetch(port, b)?)?);
    let (first, nodes) = compare(&ca, &cb);
    let (ra, rb) = (&ca.rec, &cb.rec);
    let differ = first.is_some();
    if as_json {
        let nodes: Vec<Value> = nodes
            .iter()
            .map(|(id, n)| {
                json!({"nodeId": id, "countA": n.count_a, "countB": n.count_b,
                    "inputsDiffer": n.inputs, "outputsDiffer": n.outputs,
                    "first": n.first.as_ref().map(|d| &d.long)})
            })
            .collect();
        return print_json(&json!({"runA": ra.run_id, "runB": rb.run_id,
            "firstDivergence": first.as_ref().map(|d| &d.long), "nodes": nodes}))
        .map(|()| differ);
    }
    let mut out = String::new();
    let Some(first) = &first else {
        let _ = writeln!(out, "no difference: {} and {} match", ra.run_id, rb.run_id);
        return std::io::stdout()
            .lock()
            .write_all(out.as_bytes())
            .map_err(io_fail)
            .map(|()| false);
    };
    let _ = writeln!(
        out,
        "--- {}\n+++ {}",
        one_line(&ra.run_id),
        one_line(&rb.run_id)
    );
    for (i, l) in first.short.iter().enumerate() {
        let l = one_line(l);
        if i == 0 {
            let _ = writeln!(out, "first divergence: {l}");
        } else {
            let _ = writeln!(out, "{l}");
        }
    }
    let width = nodes
        .keys()
        .map(|k| k.chars().count().min(NODE_WIDTH))
        .max()
        .unwrap_or(0);
    let mut differing = 0usize;
    for (id, n) in &nodes {
        let mut what = Vec::new();
        if n.inputs > 0 {
            what.push(format!(
                "{} input{}",
                n.inputs,
                if n.inputs == 1 { "" } else { "s" }
            ));
        }
        if n.outputs > 0 {
            what.push(format!(
                "{} output{}",
                n.outputs,
                if n.outputs == 1 { "" } else { "s" }
            ));
        }
        if n.count_a != n.count_b {
            what.push("count".to_owned());
        }
        differing += usize::from(!what.is_empty());
        let total = n.inputs + n.outputs + usize::from(n.count_a != n.count_b);
        let id: String = one_line(id).chars().take(NODE_WIDTH).collect();
        let _ = writeln!(
            out,
            " {id:<width$} | {:>3} vs {:<3} | {}",
            n.count_a,
            n.count_b,
            if what.is_empty() {
                "same".to_owned()
            } else {
                format!(
                    "{} {}",
                    what.join(", "),
                    if total == 1 { "differs" } else { "differ" }
                )
            }
        );
    }
    let _ = writeln!(
        out,
        " {} node{}, {differing} differ{}",
        nodes.len(),
        if nodes.len() == 1 { "" } else { "s" },
        if differing == 1 { "s" } else { "" }
    );
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(io_fail)?;
    Ok(differ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_replay_says_what_was_served_and_exits_with_the_apps_code() {
        let whole = r#"{"recordedRun":"run_a","recordedSteps":4,"served":4,"live":0,"unanswered":0,"diverged":0,"failed":0,"problems":[]}"#;
        let (lines, code) = conclude(Some(whole), "run_a", Some(0));
        assert_eq!(
            lines,
            [
                "graphmind: replay of run_a: 4 served, 0 went live (0 the recording could not answer), 0 diverged, 0 failed after a recorded answer"
            ]
        );
        assert_eq!(code, ExitCode::SUCCESS);
        let (_, code) = conclude(Some(whole), "run_a", Some(7));
        assert_eq!(code, ExitCode::from(7), "the app's own failure first");
    }

    #[test]
    fn a_replay_with_live_or_failed_calls_is_not_whole_and_exits_1_naming_the_steps() {
        let partial = r#"{"recordedRun":"run_a","recordedSteps":4,"served":2,"live":2,"unanswered":1,"diverged":0,"failed":1,"problems":["step 3 (llm:step) ran live: the recording has no such call","step 4 (llm:step) was answered from the recording but finished with an error"]}"#;
        let (lines, code) = conclude(Some(partial), "run_a", Some(0));
        assert_eq!(code, ExitCode::from(1));
        assert_eq!(
            lines,
            [
                "graphmind: replay of run_a: 2 served, 2 went live (1 the recording could not answer), 0 diverged, 1 failed after a recorded answer",
                "  step 3 (llm:step) ran live: the recording has no such call",
                "  step 4 (llm:step) was answered from the recording but finished with an error",
                "graphmind: the replay was not whole: some calls were not answered as recorded",
            ]
        );
        // Live from a fork point, as asked: whole.
        let forked =
            r#"{"served":2,"live":2,"unanswered":0,"diverged":0,"failed":0,"problems":[]}"#;
        assert_eq!(
            conclude(Some(forked), "run_a", Some(0)).1,
            ExitCode::SUCCESS
        );
        let diverged = r#"{"served":1,"live":0,"unanswered":0,"diverged":1,"failed":0,"problems":["replay diverged at step 2"]}"#;
        assert_eq!(
            conclude(Some(diverged), "run_a", Some(0)).1,
            ExitCode::from(1)
        );
    }

    #[test]
    fn an_app_that_wrote_no_summary_is_not_called_whole() {
        let (lines, code) = conclude(None, "run_a", Some(0));
        assert_eq!(code, ExitCode::from(1));
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("graphmind: the app reported no replay of run_a"),
            "{}",
            lines[0]
        );
        assert_eq!(conclude(None, "run_a", None).1, ExitCode::from(1), "killed");
    }

    fn plain(rec: Recording) -> Compared {
        Compared {
            rec,
            injected: Vec::new(),
        }
    }

    fn long(first: Option<Divergence>) -> Option<String> {
        first.map(|d| d.long)
    }

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
        let (first, nodes) = compare(&plain(rec("run_a", "y")), &plain(rec("run_b", "z")));
        assert_eq!(
            long(first).as_deref(),
            Some(r#"step 2 (tool:a `a`): input $.q is "y" in run_a but "z" in run_b (its step 2)"#)
        );
        let n = &nodes["tool:a"];
        assert_eq!((n.count_a, n.count_b, n.inputs, n.outputs), (2, 2, 1, 0));
        let (first, _) = compare(&plain(rec("run_a", "y")), &plain(rec("run_b", "y")));
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
        let (a, b) = (plain(a), plain(b));
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
        let (first, _) = compare(&a, &plain(c));
        assert_eq!(
            long(first).as_deref(),
            Some("step 1 (tool:a `a`): output $ is 1 in run_a but 2 in run_c (its step 2)")
        );
    }

    #[test]
    fn a_diff_line_cuts_large_values_and_names_both_lengths() {
        let big = |run: &str, tail: &str| {
            let text = format!(
                r#"{{"type":"node.started","runId":"{run}","payload":{{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"1","input":{{"doc":"{}{tail}"}}}}}}"#,
                "d".repeat(1_000_000)
            );
            Recording::parse(&text, None).expect("parses")
        };
        let (first, _) = compare(&plain(big("run_a", "x")), &plain(big("run_b", "yy")));
        let first = first.expect("they differ");
        // The text output's lines stay short however large the values.
        assert!(
            first.short.iter().all(|l| l.chars().count() < 100),
            "{:?}",
            first.short
        );
        let first = first.long;
        assert!(first.len() < 1_000, "{} bytes", first.len());
        assert!(
            first.starts_with("step 1 (tool:a `a`): input $.doc is \"ddd"),
            "{first}"
        );
        assert!(
            first.ends_with(
                "(its step 1) (values cut to 300 bytes of JSON; 1000003 bytes in run_a, 1000004 bytes in run_b)"
            ),
            "{first}"
        );
    }

    /// Regression: a tool call's provider-minted id (`call_id`, `tool_call_id`) changed in
    /// every run and was counted as an input difference.
    #[test]
    fn a_changed_call_id_is_no_input_difference() {
        let text = |run: &str, id: &str, q: &str| {
            format!(
                r#"{{"type":"node.started","runId":"{run}","payload":{{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"1","input":{{"call_id":"{id}","args":{{"q":"{q}"}},"messages":[{{"tool_call_id":"{id}"}}]}}}}}}
{{"type":"node.finished","runId":"{run}","payload":{{"nodeId":"tool:a","instanceId":"1","status":"ok","output":1}}}}"#
            )
        };
        let parse = |t: String| plain(Recording::parse(&t, None).expect("parses"));
        let (first, nodes) = compare(
            &parse(text("run_a", "call_1", "x")),
            &parse(text("run_b", "call_9", "x")),
        );
        assert_eq!(first, None);
        assert_eq!(nodes["tool:a"].inputs, 0);
        // A change the program made is still one.
        let (first, _) = compare(
            &parse(text("run_a", "call_1", "x")),
            &parse(text("run_b", "call_9", "y")),
        );
        assert!(long(first).expect("differs").contains("$.args.q"));
    }

    /// Regression: "status ok in run_b but error in run_a" did not say that the ok was an
    /// injected result.
    #[test]
    fn a_status_difference_names_the_injected_side() {
        let text = |run: &str, status: &str, injected: bool| {
            format!(
                r#"{{"type":"node.started","runId":"{run}","payload":{{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"1","input":{{}}}}}}
{{"type":"node.finished","runId":"{run}","payload":{{"nodeId":"tool:a","instanceId":"1","status":"{status}","injected":{injected}}}}}"#
            )
        };
        let load = |t: String| {
            let rec = Recording::parse(&t, None).expect("parses");
            let injected = injected_steps(&t, &rec.run_id);
            Compared { rec, injected }
        };
        let (first, _) = compare(
            &load(text("run_a", "error", false)),
            &load(text("run_b", "ok", true)),
        );
        let first = first.expect("they differ");
        assert_eq!(
            first.long,
            "step 1 (tool:a `a`): status error in run_a but ok (injected) in run_b"
        );
        assert_eq!(
            first.short,
            ["step 1 (tool:a `a`): status", "- error", "+ ok (injected)"]
        );
    }
}
