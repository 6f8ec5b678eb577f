//! Drawing: the header, the run list, the run view (execution tree and inspector), the holds
//! panel, the hold overlay, the help and the footer. Reads [`State`] and [`Ui`]; changes
//! nothing.

use graphmind_protocol::feed::{PauseInfo, PauseState, RunStatus};
use graphmind_protocol::{Mode, NodeKind, PausePoint, PauseReason};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use serde_json::Value;

use crate::access::{Action, unavailable};
use crate::overlay::{HoldOverlay, Stage};
use crate::state::{Exec, ExecStatus, Link, State};
use crate::ui::{Screen, Ui};

/// Colours, or none (`NO_COLOR`): without colour, emphasis is bold, dim and reverse only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Use colours.
    pub color: bool,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to a non-empty value.
    #[must_use]
    pub fn from_env() -> Self {
        Self {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    fn ok(self) -> Style {
        self.fg(Color::Green)
    }

    fn bad(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    fn held(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    fn dim(self) -> Style {
        self.fg(Color::DarkGray).add_modifier(Modifier::DIM)
    }

    fn key(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    fn selected(self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
}

/// `850ms`, `1.2s`, `3m04s`.
#[must_use]
pub fn fmt_ms(ms: f64) -> String {
    if ms < 1000.0 {
        format!("{}ms", ms.round() as u64)
    } else if ms < 60_000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else {
        let s = (ms / 1000.0).round() as u64;
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

fn compact(v: &Value, max: usize) -> String {
    let t = serde_json::to_string(v).unwrap_or_default();
    if t.chars().count() > max {
        let cut: String = t.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        t
    }
}

fn error_text(v: &Value) -> String {
    match (
        v.get("name").and_then(Value::as_str),
        v.get("message").and_then(Value::as_str),
    ) {
        (Some(n), Some(m)) => format!("{n}: {m}"),
        (None, Some(m)) => m.to_owned(),
        _ => compact(v, 200),
    }
}

fn run_status_span(s: RunStatus, t: Theme) -> Span<'static> {
    match s {
        RunStatus::Running => Span::styled("● running", t.fg(Color::Blue)),
        RunStatus::Ok => Span::styled("✓ ok     ", t.ok()),
        RunStatus::Error => Span::styled("✗ error  ", t.bad()),
        RunStatus::Aborted => Span::styled("⊘ aborted", t.bad()),
        RunStatus::Abandoned => Span::styled("? gone   ", t.dim()),
    }
}

fn exec_status_span(x: &Exec, held: bool, t: Theme) -> Span<'static> {
    if held {
        return Span::styled("⏸", t.held());
    }
    match x.status {
        ExecStatus::Running => Span::styled("●", t.fg(Color::Blue)),
        ExecStatus::Ok => Span::styled("✓", t.ok()),
        ExecStatus::Error => Span::styled("✗", t.bad()),
        ExecStatus::Aborted => Span::styled("⊘", t.bad()),
    }
}

fn pause_where(p: &PauseInfo) -> String {
    let point = match p.point {
        PausePoint::Before => "before",
        PausePoint::After => "after",
        PausePoint::Error => "on error",
    };
    format!("{} {}", point, p.node_id)
}

fn reason_text(r: PauseReason) -> &'static str {
    match r {
        PauseReason::Breakpoint => "a breakpoint matched",
        PauseReason::Error => "the call failed at an error gate",
        PauseReason::Step => "step mode holds every step",
        PauseReason::Loop => "the same call repeated (loop guard)",
        PauseReason::Replay => "the replay's fork point",
    }
}

/// Draws one frame.
pub fn draw(f: &mut Frame<'_>, s: &State, ui: &Ui, t: Theme) {
    let area = f.area();
    let holds = s.holds_newest_first();
    let holds_h = if holds.is_empty() {
        0
    } else {
        (holds.len() as u16 + 2).min(6).min(area.height / 3).max(3)
    };
    let [header, body, held, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(holds_h),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(f, header, s, ui, t);
    match &ui.screen {
        Screen::Runs => draw_runs(f, body, s, ui, t),
        Screen::Run(id) => draw_run(f, body, s, ui, id, t),
    }
    if !holds.is_empty() {
        draw_holds(f, held, s, ui, &holds, t);
    }
    draw_footer(f, footer, s, ui, t);
    if ui.help {
        draw_help(f, area, t);
    }
    if let Some(o) = &ui.overlay {
        draw_overlay(f, area, s, ui, o, t);
    }
}

fn draw_header(f: &mut Frame<'_>, area: Rect, s: &State, ui: &Ui, t: Theme) {
    let mut spans = vec![Span::styled(
        "graphmind",
        Style::default().add_modifier(Modifier::BOLD),
    )];
    spans.push(Span::raw(format!(" :{} ", s.port)));
    spans.push(match &s.link {
        Link::Connecting => Span::styled("○ connecting", t.dim()),
        Link::Live => Span::styled("● live", t.ok()),
        Link::Lost { attempts, .. } => Span::styled(
            format!("✗ hub lost, reconnecting (try {attempts})"),
            t.bad(),
        ),
        Link::Unauthorized(_) => Span::styled("✗ token refused", t.bad()),
    });
    spans.push(Span::raw(if area.width < 60 {
        " · "
    } else {
        " · mode "
    }));
    spans.push(match s.debug.mode {
        Mode::Run => Span::raw("run"),
        Mode::Step => Span::styled("STEP", t.held()),
    });
    if s.pause_on_error() {
        spans.push(Span::raw(" · ⏸ on error"));
    }
    let bps = s.debug.breakpoints.len() - usize::from(s.pause_on_error());
    if bps > 0 {
        spans.push(Span::raw(format!(" · {bps} bp")));
    }
    spans.push(Span::raw(format!(
        " · {} {}",
        if area.width < 60 { "ctl" } else { "control" },
        ui.access.level.as_deref().unwrap_or("?")
    )));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_runs(f: &mut Frame<'_>, area: Rect, s: &State, ui: &Ui, t: Theme) {
    let runs = ui.visible_runs(s);
    let title = if ui.filtering || !ui.filter.is_empty() {
        format!(
            " Runs ({}) /{}{} ",
            runs.len(),
            ui.filter,
            if ui.filtering { "▏" } else { "" }
        )
    } else {
        format!(" Runs ({}) ", runs.len())
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let mut lines: Vec<Line<'_>> = Vec::new();
    if let Some(l) = link_banner(s, t) {
        lines.push(l);
    }
    if runs.is_empty() {
        lines.push(Line::styled(
            if s.runs.is_empty() {
                "no runs yet: start an app that reports to this hub"
            } else {
                "no run matches the filter"
            },
            t.dim(),
        ));
    }
    let wide = inner.width >= 70;
    let skip = ui
        .run_cursor
        .saturating_sub(inner.height.saturating_sub(2) as usize);
    for (i, r) in runs
        .iter()
        .enumerate()
        .skip(skip)
        .take(inner.height as usize)
    {
        let mut spans = vec![run_status_span(r.status, t), Span::raw(" ")];
        spans.push(Span::styled(
            format!("{:<16}", r.app.as_deref().unwrap_or("?")),
            Style::default().add_modifier(Modifier::BOLD),
        ));
        if wide {
            spans.push(Span::styled(format!(" {:<24}", r.run_id), t.dim()));
            spans.push(Span::raw(format!(" {:>6} ev", r.event_count)));
        }
        spans.push(Span::raw(format!(
            " {:>7}",
            r.duration_ms
                .map_or_else(|| "…".into(), |d| fmt_ms(d as f64))
        )));
        let held = s.held_in(&r.run_id);
        if held > 0 {
            spans.push(Span::styled(format!(" ⏸{held} held"), t.held()));
        }
        if r.error_count > 0 && wide {
            spans.push(Span::styled(format!(" {} err", r.error_count), t.bad()));
        }
        let mut line = Line::from(spans);
        if i == ui.run_cursor {
            line = line.style(t.selected());
        }
        lines.push(line);
    }
    f.render_widget(Paragraph::new(lines), inner);
}

fn link_banner(s: &State, t: Theme) -> Option<Line<'static>> {
    match &s.link {
        Link::Lost { reason, .. } => Some(Line::styled(
            format!(
                "no hub on port {}: {reason}; showing what was last seen, reconnecting",
                s.port
            ),
            t.bad(),
        )),
        Link::Unauthorized(why) => Some(Line::styled(
            format!("the hub refused the agent token: {why}"),
            t.bad(),
        )),
        _ => None,
    }
}

fn exec_line(x: &Exec, held: bool, selected: bool, width: u16, t: Theme) -> Line<'static> {
    let mut spans = vec![
        Span::raw("  ".repeat(x.depth.min(8))),
        exec_status_span(x, held, t),
        Span::raw(" "),
    ];
    let kind = match x.kind {
        NodeKind::Llm => "llm",
        NodeKind::Tool => "tool",
        NodeKind::Agent => "agent",
        k => k.as_str(),
    };
    if width >= 50 {
        spans.push(Span::styled(format!("{kind} "), t.dim()));
    }
    spans.push(Span::styled(
        x.name.clone(),
        Style::default().add_modifier(Modifier::BOLD),
    ));
    if x.nth > 1 {
        spans.push(Span::raw(format!(" ×{}", x.nth)));
    }
    if x.parallel {
        spans.push(Span::styled(" ∥", t.fg(Color::Magenta)));
    }
    if let Some(d) = x.duration_ms {
        spans.push(Span::raw(format!("  {}", fmt_ms(d))));
    } else if x.status == ExecStatus::Running {
        spans.push(Span::styled("  running", t.dim()));
    }
    if let Some(h) = x.held_ms.filter(|h| *h > 0.0) {
        spans.push(Span::styled(format!("  held {}", fmt_ms(h)), t.held()));
    }
    if held {
        spans.push(Span::styled("  HELD", t.held()));
    }
    let line = Line::from(spans);
    if selected {
        line.style(t.selected())
    } else {
        line
    }
}

fn draw_run(f: &mut Frame<'_>, area: Rect, s: &State, ui: &Ui, run_id: &str, t: Theme) {
    let side = area.width >= 100;
    let [tree_area, insp_area] = if side {
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area)
    } else {
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area)
    };
    let summary = s.runs.iter().find(|r| r.run_id == run_id);
    let title = format!(
        " {} {} {} ",
        summary.and_then(|r| r.app.as_deref()).unwrap_or("run"),
        run_id,
        summary.map_or("", |r| r.status.as_str())
    );
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(tree_area);
    f.render_widget(block, tree_area);
    let mut lines = Vec::new();
    if let Some(l) = link_banner(s, t) {
        lines.push(l);
    }
    let data = s.run.as_ref().filter(|r| r.run_id == run_id);
    match data {
        None => lines.push(Line::styled("loading…", t.dim())),
        Some(r) if r.execs.is_empty() => lines.push(Line::styled(
            if r.replayed {
                "no executions yet"
            } else {
                "loading…"
            },
            t.dim(),
        )),
        Some(r) => {
            let rows = inner.height as usize;
            let skip = (ui.exec_cursor + 1).saturating_sub(rows.saturating_sub(lines.len()));
            for (i, x) in r.execs.iter().enumerate().skip(skip).take(rows) {
                let held = s.pauses.iter().any(|p| {
                    p.run_id == run_id
                        && p.instance_id.as_deref().map_or(
                            p.node_id == x.node_id && x.status == ExecStatus::Running,
                            |id| id == x.instance_id,
                        )
                });
                lines.push(exec_line(x, held, i == ui.exec_cursor, inner.width, t));
            }
        }
    }
    f.render_widget(Paragraph::new(lines), inner);
    let x = data.and_then(|r| r.execs.get(ui.exec_cursor));
    draw_inspector(f, insp_area, x, t);
}

fn messages(input: &Value) -> Option<Vec<String>> {
    let list = input.get("messages")?.as_array()?;
    Some(
        list.iter()
            .map(|m| {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
                let content = match m.get("content") {
                    Some(Value::String(c)) => c.clone(),
                    Some(v) => compact(v, 400),
                    None => String::new(),
                };
                format!("{role}: {content}")
            })
            .collect(),
    )
}

fn draw_inspector(f: &mut Frame<'_>, area: Rect, x: Option<&Exec>, t: Theme) {
    let Some(x) = x else {
        let block = Block::default().borders(Borders::ALL).title(" Inspector ");
        f.render_widget(
            Paragraph::new(Line::styled("select an execution", t.dim())).block(block),
            area,
        );
        return;
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" {} {} ", x.kind, x.name));
    let mut lines: Vec<Line<'_>> = Vec::new();
    let label = |l: &str| Span::styled(format!("{l:<10}"), t.key());
    let mut meta = format!("{:?}", x.status).to_lowercase();
    if let Some(d) = x.duration_ms {
        meta.push_str(&format!(" in {}", fmt_ms(d)));
    }
    if let Some(h) = x.held_ms.filter(|h| *h > 0.0) {
        meta.push_str(&format!(", held {}", fmt_ms(h)));
    }
    lines.push(Line::from(vec![label("status"), Span::raw(meta)]));
    lines.push(Line::from(vec![
        label("exec"),
        Span::styled(x.instance_id.clone(), t.dim()),
    ]));
    if let Some(u) = &x.usage {
        lines.push(Line::from(vec![
            label("usage"),
            Span::raw(format!(
                "{} in · {} out tokens",
                u.input_tokens, u.output_tokens
            )),
        ]));
    }
    match x.input.as_ref().map(|i| (i, messages(i))) {
        Some((_, Some(msgs))) => {
            lines.push(Line::from(label("messages")));
            lines.extend(msgs.into_iter().map(|m| Line::raw(format!("  {m}"))));
        }
        Some((i, None)) => lines.push(Line::from(vec![
            label("input"),
            Span::raw(compact(i, 2000)),
        ])),
        None => {}
    }
    if let Some(o) = &x.output {
        lines.push(Line::from(vec![
            label("output"),
            Span::raw(compact(o, 2000)),
        ]));
    }
    if let Some(e) = &x.error {
        lines.push(Line::from(vec![
            label("error"),
            Span::styled(format!("{}: {}", e.name, e.message), t.bad()),
        ]));
    }
    for (name, text) in [
        ("text", &x.tokens.text),
        ("reasoning", &x.tokens.reasoning),
        ("tool args", &x.tokens.tool_args),
    ] {
        if !text.is_empty() {
            lines.push(Line::from(vec![
                label(name),
                Span::raw(text.clone()),
                Span::styled(
                    if x.status == ExecStatus::Running {
                        "▍"
                    } else {
                        ""
                    },
                    t.dim(),
                ),
            ]));
        }
    }
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}

fn draw_holds(f: &mut Frame<'_>, area: Rect, s: &State, ui: &Ui, holds: &[&PauseInfo], t: Theme) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.held())
        .title(Span::styled(
            format!(" ⏸ Held ({}) · h decide · Tab next ", holds.len()),
            t.held(),
        ));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let sel = ui.selected_hold(s).map(|p| p.pause_id.clone());
    let wide = inner.width >= 70;
    let lines: Vec<Line<'_>> = holds
        .iter()
        .map(|p| {
            let mut spans = vec![
                Span::raw(if Some(&p.pause_id) == sel.as_ref() {
                    "▶ "
                } else {
                    "  "
                }),
                Span::styled(
                    format!("{:>6} ", fmt_ms(s.now_ms.saturating_sub(p.since) as f64)),
                    t.dim(),
                ),
                Span::styled(
                    pause_where(p),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
            ];
            if wide {
                spans.push(Span::styled(format!("  {}", p.run_id), t.dim()));
                spans.push(Span::raw(format!("  {}", p.reason)));
            }
            if p.state == PauseState::Resuming {
                spans.push(Span::styled("  resuming…", t.dim()));
            }
            if let Some(e) = p.error.as_ref().filter(|_| wide) {
                spans.push(Span::styled(format!("  {}", error_text(e)), t.bad()));
            }
            let line = Line::from(spans);
            if Some(&p.pause_id) == sel.as_ref() {
                line.style(t.selected())
            } else {
                line
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

fn draw_footer(f: &mut Frame<'_>, area: Rect, s: &State, ui: &Ui, t: Theme) {
    if let Some((msg, err)) = &ui.status {
        f.render_widget(
            Paragraph::new(Line::styled(
                msg.clone(),
                if *err { t.bad() } else { t.ok() },
            )),
            area,
        );
        return;
    }
    let mut keys: Vec<(&str, &str)> = match ui.screen {
        Screen::Runs => vec![("↑↓", "select"), ("Enter", "open"), ("/", "filter")],
        Screen::Run(_) => vec![("↑↓", "select"), ("Esc", "runs"), ("b", "break here")],
    };
    if !s.pauses.is_empty() {
        keys.insert(0, ("h", "decide"));
    }
    keys.extend([
        ("t", "run/step"),
        ("E", "pause on error"),
        ("?", "help"),
        ("q", "quit"),
    ]);
    let mut spans = Vec::new();
    for (k, what) in keys {
        spans.push(Span::styled(k.to_owned(), t.key()));
        spans.push(Span::raw(format!(" {what}  ")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn draw_help(f: &mut Frame<'_>, area: Rect, t: Theme) {
    let rows = [
        ("↑↓ j k", "move"),
        ("Enter", "open the run"),
        ("Esc", "back to the runs"),
        ("/", "filter the runs"),
        ("h", "decide the selected hold"),
        ("Tab [ ]", "next / previous hold"),
        ("t", "toggle run / step mode"),
        ("E", "toggle pause on error"),
        ("b", "breakpoint before the selected node"),
        ("B", "clear every breakpoint"),
        ("q Ctrl-C", "quit"),
    ];
    let lines: Vec<Line<'_>> = rows
        .iter()
        .map(|(k, w)| {
            Line::from(vec![
                Span::styled(format!("{k:<10}"), t.key()),
                Span::raw(*w),
            ])
        })
        .collect();
    let r = centered(area, 50, lines.len() as u16 + 2);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Keys (any key closes) "),
        ),
        r,
    );
}

/// The overlay's lines for `o` (its height at a width follows from them).
fn overlay_lines(s: &State, ui: &Ui, o: &HoldOverlay, width: u16, t: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let Some(p) = s.pause(&o.run_id, &o.pause_id) else {
        lines.push(Line::styled(
            format!("pause {} of run {}", o.pause_id, o.run_id),
            t.dim(),
        ));
        if let Some(n) = &o.note {
            lines.push(Line::styled(
                n.text.clone(),
                if n.error { t.bad() } else { t.ok() },
            ));
        }
        return lines;
    };
    let max = (width as usize).saturating_sub(12).max(10);
    lines.push(Line::from(vec![
        Span::styled("Held ", t.held()),
        Span::styled(
            pause_where(p),
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ]));
    lines.push(Line::styled(
        format!(
            "why: {} · held {} · run {}",
            reason_text(p.reason),
            fmt_ms(s.now_ms.saturating_sub(p.since) as f64),
            p.run_id
        ),
        t.dim(),
    ));
    if let Some(e) = &p.error {
        lines.push(Line::from(vec![
            Span::styled("error  ", t.key()),
            Span::styled(error_text(e), t.bad()),
        ]));
    }
    if let Some(i) = &p.input {
        lines.push(Line::from(vec![
            Span::styled("input  ", t.key()),
            Span::raw(compact(i, max)),
        ]));
    }
    if let Some(out) = p.output.as_ref().filter(|o| !o.is_null()) {
        lines.push(Line::from(vec![
            Span::styled("output ", t.key()),
            Span::raw(compact(out, max)),
        ]));
    }
    if s.debug.mode == Mode::Step {
        lines.push(Line::styled(
            "step mode is on: the next step holds too (t: run)",
            t.dim(),
        ));
    }
    lines.push(Line::raw(""));
    match &o.stage {
        Stage::Choose => {
            for (n, a) in Action::ALL.iter().enumerate() {
                let why = unavailable(*a, p, &ui.access);
                let cursor = if n == o.cursor { "› " } else { "  " };
                let mut spans = vec![
                    Span::raw(cursor),
                    Span::styled(
                        format!("{} {} ", n + 1, a.key()),
                        if why.is_some() { t.dim() } else { t.key() },
                    ),
                    Span::styled(
                        a.label().to_owned(),
                        if why.is_some() {
                            t.dim()
                        } else {
                            Style::default()
                        },
                    ),
                ];
                if let Some(w) = why {
                    spans.push(Span::styled(format!("  unavailable: {w}"), t.dim()));
                }
                let mut line = Line::from(spans);
                if n == o.cursor {
                    line = line.style(Style::default().add_modifier(Modifier::BOLD));
                }
                lines.push(line);
            }
            lines.push(Line::from(vec![
                Span::raw(if o.remember { "  [x] " } else { "  [ ] " }),
                Span::styled("m ", t.key()),
                Span::raw("for this run (continue, inject, reject)"),
            ]));
            lines.push(Line::styled("key or Enter picks · Esc closes", t.dim()));
        }
        Stage::Confirm { action, value } => {
            let mut what = format!("Send {} ({})", action.label(), action.wire(p.point));
            if let Some(v) = value {
                what.push_str(&format!(" with {}", compact(v, max)));
            }
            if o.remember && action.rememberable() {
                what.push_str(", for this run");
            }
            lines.push(Line::styled(
                what,
                Style::default().add_modifier(Modifier::BOLD),
            ));
            lines.push(Line::styled("Enter confirms · Esc back", t.dim()));
        }
        Stage::Reason(text) => {
            lines.push(Line::raw(
                "Why is the call rejected? (the caller gets this back)",
            ));
            lines.push(Line::from(vec![
                Span::styled("> ", t.key()),
                Span::raw(format!("{text}▏")),
            ]));
            lines.push(Line::styled("Enter confirms · Esc back", t.dim()));
        }
        Stage::Inline { action, text } => {
            lines.push(Line::raw(if *action == Action::Inject {
                "Value to return instead (JSON):"
            } else {
                "Input to run the call with (JSON):"
            }));
            lines.push(Line::from(vec![
                Span::styled("> ", t.key()),
                Span::raw(format!("{text}▏")),
            ]));
            lines.push(Line::styled("Enter confirms · Esc back", t.dim()));
        }
        Stage::Editor(a) => lines.push(Line::styled(
            format!("editing the {} value in $EDITOR…", a.label()),
            t.dim(),
        )),
        Stage::Sending(_) | Stage::Gone => {}
    }
    if let Some(n) = &o.note {
        lines.push(Line::styled(
            n.text.clone(),
            if n.error { t.bad() } else { t.ok() },
        ));
    }
    lines
}

/// The height the overlay wants at `width`.
#[must_use]
pub fn overlay_height(s: &State, ui: &Ui, o: &HoldOverlay, width: u16) -> u16 {
    let inner = width.saturating_sub(2).max(1) as usize;
    let rows: usize = overlay_lines(s, ui, o, width, Theme { color: false })
        .iter()
        .map(|l| l.width().max(1).div_ceil(inner))
        .sum();
    rows as u16 + 2
}

fn draw_overlay(f: &mut Frame<'_>, area: Rect, s: &State, ui: &Ui, o: &HoldOverlay, t: Theme) {
    let w = area.width.min(90);
    let h = overlay_height(s, ui, o, w);
    let r = centered(area, w, h);
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.held())
        .title(Span::styled(format!(" Hold {} ", o.pause_id), t.held()));
    f.render_widget(
        Paragraph::new(overlay_lines(s, ui, o, w, t))
            .block(block)
            .wrap(Wrap { trim: false }),
        r,
    );
}
