//! The control commands (`runs`, `record`, `pauses`, `wait`, `resume`, `break`, `mode`,
//! `open`): they talk to a running `graphmind serve` over its HTTP API (`docs/http-api.md`).
//!
//! Exit codes: 0 ok, 1 usage, 2 timeout, 3 unreachable, 4 gone, 5 unauthorized, 6 refused,
//! 7 taken. Without `--port` a command talks to `$GRAPHMIND_PORT`, else to 4747, or, when
//! nothing answers there, to the one live hub of the run files (3 when there are several: it
//! names their ports).
//!
//! `http` finds the hub and speaks HTTP/1.1 to it; `runs` lists runs and records one;
//! `pauses` lists, waits for and resumes pauses; `debug` sets breakpoints and the mode. This
//! module holds the arguments, the exit codes and what the commands share.

mod debug;
mod open;
mod pauses;
mod replay;
mod runs;
mod target;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use debug::{breakpoints, print_debug};
use graphmind_connect::Answer;
use pauses::{Decision, pauses, resume, wait};
use runs::{record, record_into, runs};
use target::{DEFAULT_PORT, TargetHub};

/// Which hub to talk to.
#[derive(Args, Debug, Clone)]
pub struct HubArgs {
    /// Port of the running `graphmind serve` [default: $GRAPHMIND_PORT, else 4747; when
    /// nothing answers there, the one live hub whose run file is in $GRAPHMIND_HOME/run].
    #[arg(long)]
    pub port: Option<u16>,
}

/// The control subcommands.
#[derive(Subcommand, Debug)]
pub enum ControlCommand {
    /// List runs, newest first.
    Runs {
        #[command(flatten)]
        hub: HubArgs,
        /// One JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write a run's stored envelopes as NDJSON.
    Record {
        #[command(flatten)]
        hub: HubArgs,
        /// The run.
        run_id: String,
        /// Output file (default stdout).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Re-run an app against a recorded run: each call the recording has is answered from it
    /// (its body does not run) until the fork point, then the run is live. The app reports
    /// to the hub as a new run with `meta.replayOf`.
    Replay {
        #[command(flatten)]
        hub: HubArgs,
        /// The recorded run: a run id (fetched from the hub) or a `graphmind record` file.
        source: String,
        /// Where the live part begins: a step number (`3`, `step 3`) or a node
        /// (`tool:lookup_order`, `lookup_order`); default: every recorded call is replayed.
        #[arg(long)]
        until: Option<String>,
        /// When a live input differs from the recorded one: stop (abort the run there, naming
        /// step, node and field) or go live from there.
        #[arg(long, value_parser = ["stop", "live"], default_value = "stop")]
        on_diverge: String,
        /// Hold at the fork point (a pause on the hub) so it can be edited or injected first.
        #[arg(long)]
        hold: bool,
        /// The command that starts the app, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Compare two runs (run ids or `graphmind record` files): the first divergence and the
    /// differences per node, executions paired by node and order. Exits like diff(1): 0 when
    /// the runs match, 1 when they differ, 2 when they cannot be compared.
    Diff {
        #[command(flatten)]
        hub: HubArgs,
        /// The first run.
        run_a: String,
        /// The second run.
        run_b: String,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// List open pauses.
    Pauses {
        #[command(flatten)]
        hub: HubArgs,
        /// Only this run's.
        #[arg(long = "run")]
        run: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Block until a pause opens and show it.
    Wait {
        #[command(flatten)]
        hub: HubArgs,
        /// Give up after this many seconds (exit 2).
        #[arg(long)]
        timeout: Option<f64>,
        /// Only this run's.
        #[arg(long = "run")]
        run: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Release a held gate.
    Resume {
        #[command(flatten)]
        hub: HubArgs,
        /// The pause.
        pause_id: String,
        /// Its run (default: the run of the one open pause with this id).
        #[arg(long = "run")]
        run: Option<String>,
        /// continue, retry, inject, abort or reject.
        #[arg(long, value_parser = ["continue", "retry", "inject", "abort", "reject"])]
        action: String,
        /// Injected output: JSON text or @file.
        #[arg(long)]
        output: Option<String>,
        /// Run the held call with this input instead (continue or retry at an editable
        /// gate): JSON text or @file.
        #[arg(long)]
        input: Option<String>,
        /// Why the call is rejected (reject): the caller gets it back.
        #[arg(long)]
        reason: Option<String>,
        /// Apply the same decision to further holds of this node in this run (continue,
        /// inject, reject), until revoked in the viewer or with
        /// `POST /api/runs/<run>/remembered/clear`.
        #[arg(long)]
        remember: bool,
        /// Who decides, as stamped onto the release (default: the user the hub runs as).
        #[arg(long)]
        operator: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Set, clear or list breakpoints.
    Break {
        #[command(flatten)]
        hub: HubArgs,
        /// set, clear or list (clear without a matcher clears every breakpoint).
        #[arg(value_parser = ["set", "clear", "list"])]
        op: String,
        /// Node kind.
        #[arg(long)]
        kind: Option<String>,
        /// Node name.
        #[arg(long)]
        name: Option<String>,
        /// before, after or error.
        #[arg(long, value_parser = ["before", "after", "error"])]
        point: Option<String>,
        /// Print the debug state as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Open the viewer of a running hub (its link, with the viewer token, from the run file).
    Open {
        #[command(flatten)]
        hub: HubArgs,
        /// Print the link on stdout instead of opening a browser.
        #[arg(long)]
        print: bool,
    },
    /// Switch the debugger mode (run or step).
    Mode {
        #[command(flatten)]
        hub: HubArgs,
        /// run or step.
        #[arg(value_parser = ["run", "step"])]
        mode: String,
        /// Print the debug state as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The exit codes of the control commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Bad arguments, or a request the hub rejected as malformed.
    Usage = 1,
    /// Nothing happened in time.
    Timeout = 2,
    /// No hub answers on the port.
    Unreachable = 3,
    /// No such run or pause (any more).
    Gone = 4,
    /// Missing, wrong or insufficient token.
    Unauthorized = 5,
    /// The app refused the resume; its gate stays held.
    Refused = 6,
    /// Another resume got the pause first.
    Taken = 7,
}

/// A failed command: an exit code and one line for stderr.
#[derive(Debug)]
pub struct Fail {
    code: Exit,
    msg: String,
}

impl Fail {
    fn new(code: Exit, msg: impl Into<String>) -> Self {
        Self {
            code,
            msg: msg.into(),
        }
    }

    /// Turns an unexpected HTTP answer into a failure with the matching exit code.
    fn of(a: &Answer) -> Self {
        let code = match a.status {
            202 => Exit::Timeout,
            401 | 403 => Exit::Unauthorized,
            404 | 410 => Exit::Gone,
            409 => Exit::Taken,
            422 => Exit::Refused,
            400..=499 => Exit::Usage,
            _ => Exit::Unreachable,
        };
        let msg = a.reason();
        let msg = if a.status >= 500 {
            format!("the debugger failed (HTTP {}): {msg}", a.status)
        } else {
            msg
        };
        Self::new(code, msg)
    }
}

/// One line, no control characters: the hub's words are shown as they are but never break
/// the one-line rule.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Runs a control command.
pub fn main(cmd: ControlCommand) -> ExitCode {
    let out = match cmd {
        ControlCommand::Replay {
            hub,
            source,
            until,
            on_diverge,
            hold,
            command,
        } => replay::replay(&replay::ReplayArgs {
            port: hub.port,
            source: &source,
            until: until.as_deref(),
            on_diverge: &on_diverge,
            hold,
            command: &command,
        }),
        ControlCommand::Diff {
            hub,
            run_a,
            run_b,
            json,
        } => {
            return match replay::diff(hub.port, &run_a, &run_b, json) {
                Ok(differ) => ExitCode::from(if differ {
                    replay::diff_exit::DIFFER
                } else {
                    replay::diff_exit::SAME
                }),
                Err(f) => {
                    eprintln!("graphmind: {}", one_line(&f.msg));
                    ExitCode::from(replay::diff_exit::TROUBLE)
                }
            };
        }
        cmd => run(cmd).map(|()| ExitCode::SUCCESS),
    };
    match out {
        Ok(code) => code,
        Err(f) => {
            eprintln!("graphmind: {}", one_line(&f.msg));
            ExitCode::from(f.code as u8)
        }
    }
}

/// How long plain reads may take.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// A resume waits up to 5 s for the app on the hub's side; allow for that.
const RESUME_TIMEOUT: Duration = Duration::from_secs(15);

fn run(cmd: ControlCommand) -> Result<(), Fail> {
    match cmd {
        ControlCommand::Runs { hub, json } => runs(&TargetHub::locate(hub.port)?, json),
        ControlCommand::Replay { .. } => Err(Fail::new(Exit::Usage, "replay runs from main")),
        ControlCommand::Diff { .. } => Err(Fail::new(Exit::Usage, "diff runs from main")),
        ControlCommand::Record { hub, run_id, out } => {
            record(&TargetHub::locate(hub.port)?, &run_id, out.as_deref())
        }
        ControlCommand::Pauses { hub, run, json } => {
            pauses(&TargetHub::locate(hub.port)?, run.as_deref(), json)
        }
        ControlCommand::Wait {
            hub,
            timeout,
            run,
            json,
        } => wait(hub.port, timeout, run.as_deref(), json),
        ControlCommand::Resume {
            hub,
            pause_id,
            run,
            action,
            output,
            input,
            reason,
            remember,
            operator,
            json,
        } => resume(
            hub.port,
            &pause_id,
            run.as_deref(),
            &Decision {
                action,
                output,
                input,
                reason,
                remember,
                operator,
            },
            json,
        ),
        ControlCommand::Break {
            hub,
            op,
            kind,
            name,
            point,
            json,
        } => breakpoints(hub.port, &op, kind, name, point, json),
        ControlCommand::Open { hub, print } => open::open(hub.port, print),
        ControlCommand::Mode { hub, mode, json } => {
            let h = TargetHub::locate(hub.port)?;
            let state = debug::post_debug(&h, "/api/debug/mode", &json!({"mode": mode}), "mode")?;
            print_debug(&state, json)
        }
    }
}

fn expect_ok(a: Answer) -> Result<Value, Fail> {
    if a.status == 200 {
        let v = a.json();
        if v.is_null() {
            return Err(Fail::new(
                Exit::Unreachable,
                "the debugger's answer is not JSON",
            ));
        }
        Ok(v)
    } else {
        Err(Fail::of(&a))
    }
}

/// A hub's answer read as one of the typed bodies of `graphmind_protocol` (`what` names it
/// in the error).
fn typed<T: serde::de::DeserializeOwned>(v: &Value, what: &str) -> Result<T, Fail> {
    T::deserialize(v).map_err(|e| {
        Fail::new(
            Exit::Unreachable,
            format!("the debugger's answer is not {what}: {e}"),
        )
    })
}

/// Percent-encodes a path segment or query value.
fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn print_json(v: &Value) -> Result<(), Fail> {
    let mut o = std::io::stdout().lock();
    writeln!(o, "{v}").map_err(io_fail)
}

fn io_fail(e: std::io::Error) -> Fail {
    Fail::new(Exit::Usage, format!("cannot write the output: {e}"))
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("-")
}

/// `1700000000000` → `2023-11-14 22:13:20` (UTC).
fn time_of(ms: Option<u64>) -> String {
    let Some(ms) = ms else {
        return "-".into();
    };
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A clap usage error as one line (`graphmind: invalid value 'x' for '--action <ACTION>'
/// [possible values: …] (see --help)`), for the one-line error rule.
pub fn usage_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        // `graphmind` alone: the help is the clearest answer.
        return text.trim_end().to_owned();
    }
    let mut parts: Vec<&str> = Vec::new();
    let mut in_usage = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("Usage:") {
            in_usage = true;
            continue;
        }
        if in_usage && line.starts_with(' ') {
            continue;
        }
        in_usage = false;
        if t.is_empty() || t.starts_with("For more information") {
            continue;
        }
        parts.push(t.strip_prefix("error: ").unwrap_or(t));
    }
    format!("graphmind: {} (see --help)", one_line(&parts.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::pauses::{Control, output_arg, resume_advice, resume_commands, sh};
    use super::*;

    #[test]
    fn http_statuses_map_to_exit_codes() {
        let code = |status| {
            Fail::of(&Answer {
                status,
                body: String::new(),
            })
            .code
        };
        assert_eq!(code(400), Exit::Usage);
        assert_eq!(code(415), Exit::Usage);
        assert_eq!(code(202), Exit::Timeout);
        assert_eq!(code(401), Exit::Unauthorized);
        assert_eq!(code(403), Exit::Unauthorized);
        assert_eq!(code(404), Exit::Gone);
        assert_eq!(code(410), Exit::Gone);
        assert_eq!(code(409), Exit::Taken);
        assert_eq!(code(422), Exit::Refused);
        assert_eq!(code(500), Exit::Unreachable);
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(sh("pause_ab12_3"), "pause_ab12_3");
        assert_eq!(sh(r#"{"a":1}"#), r#"'{"a":1}'"#);
        assert_eq!(sh("it's"), r"'it'\''s'");
        assert_eq!(sh(""), "''");
    }

    #[test]
    fn resume_commands_name_the_port_only_when_not_default() {
        let p = json!({"pauseId": "pause_x_1", "runId": "run_1", "output": {"v": 2}});
        let all = ["continue", "retry", "inject", "abort"];
        let c = resume_commands(&p, 4747, &all, true);
        assert_eq!(
            c[0],
            "graphmind resume pause_x_1 --run run_1 --action continue"
        );
        assert_eq!(
            c[2],
            r#"graphmind resume pause_x_1 --run run_1 --action inject --output '{"v":2}'"#
        );
        assert!(resume_commands(&p, 5000, &all, true)[3].ends_with("--port 5000 --action abort"));
    }

    #[test]
    fn an_edit_at_an_after_or_error_gate_is_suggested_with_retry_not_continue() {
        let all = ["continue", "retry", "inject", "abort"];
        let before = json!({"pauseId": "p_1", "runId": "r", "point": "before",
            "editable": true, "input": {"a": 1}});
        assert_eq!(
            resume_commands(&before, 4747, &all, true)[1],
            r#"graphmind resume p_1 --run r --action continue --input '{"a":1}'"#
        );
        for point in ["after", "error"] {
            let p = json!({"pauseId": "p_2", "runId": "r", "point": point,
                "editable": true, "input": {"a": 1}});
            assert_eq!(
                resume_commands(&p, 4747, &all, true)[1],
                r#"graphmind resume p_2 --run r --action retry --input '{"a":1}'"#,
                "{point}"
            );
        }
    }

    fn control<'a>(level: Option<&'a str>, problem: Option<&'a str>) -> Control<'a> {
        Control {
            allow_control: level,
            token_problem: problem,
            started_by: "serve",
        }
    }

    #[test]
    fn resume_advice_offers_only_what_allow_control_permits() {
        let p = json!({"pauseId": "pause_x_1", "runId": "run_1", "editable": true,
            "point": "before", "input": {"a": 1}});
        let (c, note) = resume_advice(&p, 4747, &control(Some("off"), None));
        assert!(c.is_empty());
        let note = note.expect("a note for off");
        assert!(note.contains("viewer") && note.contains("--allow-control resume"));
        let (c, note) = resume_advice(&p, 4747, &control(Some("resume"), None));
        assert_eq!(c.len(), 3);
        assert!(
            c.iter()
                .all(|c| !c.contains("inject") && !c.contains("--input"))
        );
        assert!(
            note.expect("a note for resume")
                .contains("--allow-control inject")
        );
        // inject: inject, but no edited input (that is the `edit` level, as in the reference).
        let (c, note) = resume_advice(&p, 4747, &control(Some("inject"), None));
        assert_eq!(c.len(), 4, "{c:?}");
        assert!(c.iter().all(|c| !c.contains("--input")), "{c:?}");
        assert!(
            note.expect("a note for an editable gate")
                .contains("--allow-control edit")
        );
        let (c, note) = resume_advice(&p, 4747, &control(Some("edit"), None));
        assert_eq!((c.len(), note), (5, None));
        assert!(c[1].contains("--input"), "{c:?}");
        // A gate that says what it accepts: only those are offered.
        let streaming = json!({"pauseId": "pause_x_2", "runId": "run_1", "actions": ["continue", "retry", "abort"]});
        let (c, _) = resume_advice(&streaming, 4747, &control(Some("inject"), None));
        assert_eq!(c.len(), 3);
        assert!(c.iter().all(|c| !c.contains("inject")));
        let (c, note) = resume_advice(&p, 4747, &control(Some("inject"), Some("no run file")));
        assert!(c.is_empty());
        assert!(note.expect("a note without token").contains("no run file"));
    }

    /// Regression: on a `graphmind demo` hub the advice told the user to restart
    /// `graphmind serve`, which is not running; it names the demo.
    #[test]
    fn on_a_demo_hub_the_advice_names_the_demo_not_serve() {
        let p = json!({"pauseId": "pause_x_1", "runId": "run_1"});
        let demo = Control {
            started_by: "demo",
            ..control(Some("off"), None)
        };
        let (_, note) = resume_advice(&p, 4747, &demo);
        let note = note.expect("a note for off");
        assert!(
            note.contains("`graphmind demo --allow-control resume`"),
            "{note}"
        );
        assert!(!note.contains("serve"), "{note}");
        let (_, note) = resume_advice(&p, 4747, &control(Some("off"), None));
        assert!(
            note.expect("a note")
                .contains("`graphmind serve --allow-control resume`")
        );
    }

    #[test]
    fn times_print_as_utc() {
        assert_eq!(time_of(Some(1_700_000_000_000)), "2023-11-14 22:13:20");
        assert_eq!(time_of(Some(951_782_400_000)), "2000-02-29 00:00:00");
        assert_eq!(time_of(None), "-");
    }

    #[test]
    fn encoding_keeps_ids_and_escapes_the_rest() {
        assert_eq!(enc("run_ab-1.2~"), "run_ab-1.2~");
        assert_eq!(enc("a/b c?"), "a%2Fb%20c%3F");
    }

    #[test]
    fn inject_output_must_be_json() {
        assert_eq!(output_arg("{\"a\":1}").unwrap(), json!({"a": 1}));
        assert_eq!(output_arg("null").unwrap(), Value::Null);
        assert_eq!(output_arg("hello").unwrap_err().code, Exit::Usage);
        assert_eq!(output_arg("@/nonexistent/x").unwrap_err().code, Exit::Usage);
    }
}
