//! Run scopes: `run.started`, the agent node, `run.finished`, and abort.
//!
//! A run is a future wrapped by [`run`] (or [`Session::run`](crate::Session::run), or the
//! `run!` macro). Everything instrumented inside it — on the same task — reports to that run
//! and hangs under its agent node. When the debugger answers `abort` at any gate inside it,
//! the run's future is dropped (so nothing after the gate executes) and the scope returns
//! [`Err(Aborted)`](Aborted).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use graphmind_protocol::{ErrorInfo, Extra, Message, NodeKind, RunFinished, RunStarted, Status};

use crate::exec::scope::{RunCtx, Scope};
use crate::exec::{Host, new_run_id};
use crate::node::{Finish, NodeRun, StartSpec};

/// A run ended by `abort` from the debugger. Its future was dropped at the gate that was
/// aborted, so no code after that point ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aborted {
    run_id: String,
    name: String,
}

impl Aborted {
    /// The aborted run's id (`run_` + 12 hex).
    #[must_use]
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The aborted run's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for Aborted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "run `{}` ({}) was aborted from the debugger",
            self.name, self.run_id
        )
    }
}

impl std::error::Error for Aborted {}

/// Runs `fut` as a run named `name` on the default session: emits `run.started`, the agent
/// node `agent:<name>` (instanceId = the run id) and `run.finished`. Returns the future's
/// output, or [`Aborted`] if the debugger aborted the run at any gate inside it.
///
/// The run is `ok` whatever the output is; use [`run_result`] when the future returns a
/// `Result` whose `Err` should mark the run `error`. A disabled session runs `fut` untouched.
///
/// ```no_run
/// # async fn agent_loop() -> u32 { 1 }
/// # async fn demo() {
/// match graphmind::run("handle-ticket", agent_loop()).await {
///     Ok(answer) => println!("{answer}"),
///     Err(aborted) => eprintln!("{aborted}"),
/// }
/// # }
/// ```
pub async fn run<F: Future>(name: impl Into<String>, fut: F) -> Result<F::Output, Aborted> {
    run_in(None, name.into(), fut, |_: &F::Output| None).await
}

/// Like [`run`], for a future returning `Result`: an `Err` ends the run with status `error`
/// (its `Display` as the message) and is returned as `Ok(Err(e))`.
pub async fn run_result<F, T, E>(name: impl Into<String>, fut: F) -> Result<Result<T, E>, Aborted>
where
    F: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    run_in(None, name.into(), fut, |out: &Result<T, E>| {
        out.as_ref()
            .err()
            .map(|e| crate::node::error_info(crate::node::short_type_name::<E>(), e.to_string()))
    })
    .await
}

impl crate::Session {
    /// [`run`] on this session instead of the default one.
    pub async fn run<F: Future>(
        &self,
        name: impl Into<String>,
        fut: F,
    ) -> Result<F::Output, Aborted> {
        let host: Arc<dyn Host> = self.inner().clone();
        run_in(Some(host), name.into(), fut, |_: &F::Output| None).await
    }
}

/// The run scope; `classify` tells whether the output is an error.
pub(crate) async fn run_in<F, C>(
    host: Option<Arc<dyn Host>>,
    name: String,
    fut: F,
    classify: C,
) -> Result<F::Output, Aborted>
where
    F: Future,
    C: FnOnce(&F::Output) -> Option<ErrorInfo>,
{
    let host = match host {
        Some(h) => h,
        None if !crate::exec::default_enabled() => return Ok(fut.await),
        None => crate::exec::default_host(),
    };
    if !host.enabled() {
        return Ok(fut.await);
    }
    if host.needs_first_use() {
        host.first_use().await;
    }
    let run_id = new_run_id();
    let ctx = Arc::new(RunCtx::new(Arc::clone(&host), run_id.clone(), name.clone()));
    let mut meta = host.meta();
    meta.insert("name".into(), name.clone().into());
    host.emit(
        &run_id,
        Message::RunStarted(RunStarted {
            app: host.app(),
            sdk: host.sdk(),
            meta: Some(meta),
            extra: Extra::new(),
        }),
    );
    let agent = NodeRun::start(
        Arc::clone(&host),
        run_id.clone(),
        StartSpec {
            node_id: ctx.agent_node.clone(),
            kind: NodeKind::Agent,
            name: name.clone(),
            instance_id: run_id.clone(),
            parent_id: None,
            input: None,
            extra: Extra::new(),
        },
    );
    let mut guard = RunGuard {
        host: Arc::clone(&host),
        run_id: run_id.clone(),
        agent: Some(agent),
    };
    let scope = Scope {
        run: Some(Arc::clone(&ctx)),
        clock: Scope::current().clock,
    };
    let out = Abortable {
        ctx: Arc::clone(&ctx),
        fut: Some(Box::pin(scope.enter(fut))),
    }
    .await;
    match out {
        Some(value) => {
            let error = classify(&value);
            guard.end(
                if error.is_some() {
                    Status::Error
                } else {
                    Status::Ok
                },
                error,
            );
            Ok(value)
        }
        None => {
            guard.end(Status::Aborted, None);
            Err(Aborted { run_id, name })
        }
    }
}

/// Ends the run exactly once; a run dropped half-way ends `aborted`.
struct RunGuard {
    host: Arc<dyn Host>,
    run_id: String,
    agent: Option<NodeRun>,
}

impl RunGuard {
    fn end(&mut self, status: Status, error: Option<ErrorInfo>) {
        let Some(agent) = self.agent.take() else {
            return;
        };
        if let Some(e) = &error {
            agent.error(e.clone());
        }
        agent.finish(status, Finish::default());
        self.host.emit(
            &self.run_id,
            Message::RunFinished(RunFinished {
                status,
                error,
                extra: Extra::new(),
            }),
        );
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if self.agent.is_some() {
            let status = if std::thread::panicking() {
                Status::Error
            } else {
                Status::Aborted
            };
            let error = (status == Status::Error)
                .then(|| crate::node::error_info("panic", "the run's future panicked".to_owned()));
            self.end(status, error);
        }
    }
}

/// Polls the run's future until it finishes (`Some`) or the run is aborted (`None`, the
/// future dropped at once).
struct Abortable<F> {
    ctx: Arc<RunCtx>,
    fut: Option<Pin<Box<F>>>,
}

impl<F: Future> Future for Abortable<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        this.ctx.register_waker(cx.waker());
        if !this.ctx.is_aborted()
            && let Some(fut) = this.fut.as_mut()
            && let Poll::Ready(v) = fut.as_mut().poll(cx)
        {
            this.fut = None;
            return Poll::Ready(Some(v));
        }
        if this.ctx.is_aborted() {
            this.fut = None;
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}
