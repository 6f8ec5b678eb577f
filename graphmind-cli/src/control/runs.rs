//! `graphmind runs` and `graphmind record`: the runs the hub knows, and one run's stored
//! envelopes.

use graphmind_protocol::feed::RunsList;

use super::*;

pub(super) fn runs(h: &TargetHub, as_json: bool) -> Result<(), Fail> {
    let v = expect_ok(h.get("/api/runs", READ_TIMEOUT)?)?;
    if as_json {
        return print_json(&v);
    }
    let list: RunsList = typed(&v, "a runs list")?;
    let mut out = String::new();
    if list.runs.is_empty() {
        out.push_str("no runs yet\n");
    } else {
        let _ = writeln!(
            out,
            "{:<20} {:<10} {:<4} {:>7} {:<19} {:<16} NAME",
            "RUN", "STATUS", "LIVE", "EVENTS", "STARTED (UTC)", "APP"
        );
        for r in &list.runs {
            let _ = writeln!(
                out,
                "{:<20} {:<10} {:<4} {:>7} {:<19} {:<16} {}",
                // A GraphMind 0.6 hub lists `id` (read as `runId`) and no name.
                r.run_id,
                r.status.as_str(),
                if r.live { "yes" } else { "no" },
                r.event_count,
                time_of((r.started_at > 0).then_some(r.started_at)),
                r.app.as_deref().unwrap_or("-"),
                r.name.as_deref().unwrap_or("-"),
            );
        }
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(io_fail)
}

/// Page size of `record`.
const PAGE: usize = 10_000;

pub(super) fn record(
    h: &TargetHub,
    run_id: &str,
    out: Option<&std::path::Path>,
) -> Result<(), Fail> {
    let mut sink: Box<dyn std::io::Write> = match out {
        Some(p) => Box::new(std::io::BufWriter::new(std::fs::File::create(p).map_err(
            |e| Fail::new(Exit::Usage, format!("cannot create {}: {e}", p.display())),
        )?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let n = record_into(h, run_id, &mut sink)?;
    sink.flush().map_err(io_fail)?;
    if let Some(p) = out {
        eprintln!("graphmind: wrote {n} events of {run_id} to {}", p.display());
    }
    Ok(())
}

/// Writes run `run_id`'s stored envelopes into `sink` as NDJSON, page by page; the number of
/// events written.
pub(super) fn record_into(
    h: &TargetHub,
    run_id: &str,
    sink: &mut dyn std::io::Write,
) -> Result<usize, Fail> {
    let mut after: Option<u64> = None;
    let mut n = 0usize;
    loop {
        let q = after.map_or_else(String::new, |a| format!("&afterSeq={a}"));
        let path = format!("/api/runs/{}/events?limit={PAGE}{q}", enc(run_id));
        let a = h.get(&path, READ_TIMEOUT)?;
        if a.status == 404 {
            return Err(Fail::new(Exit::Gone, format!("no run {run_id}")));
        }
        let page = expect_ok(a)?;
        let events = page
            .get("events")
            .and_then(Value::as_array)
            .ok_or_else(|| Fail::new(Exit::Unreachable, "the debugger's answer has no events"))?;
        for e in events {
            writeln!(sink, "{e}").map_err(io_fail)?;
            n += 1;
        }
        let next = page.get("nextAfterSeq").and_then(Value::as_u64);
        match next {
            Some(s) if page["more"] == json!(true) && after.is_none_or(|a| s > a) => {
                after = Some(s);
            }
            _ => break,
        }
    }
    Ok(n)
}
