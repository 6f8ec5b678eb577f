//! The run scope itself (feature `enabled`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use graphmind_protocol::{ErrorInfo, Extra, Message, NodeKind, RunFinished, RunStarted, Status};

use super::Aborted;
use crate::call::Host;
use crate::call::node_run::{Finish, NodeRun, StartSpec};
use crate::call::scope::{RunCtx, Scope};
use crate::ids::new_run_id;

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
        None if !crate::call::default_enabled() => return Ok(fut.await),
        None => crate::call::default_host(),
    };
    if !host.enabled() {
        return Ok(fut.await);
    }
    if host.needs_first_use() {
        host.first_use().await;
    }
    let run_id: crate::ids::RunId = new_run_id().into();
    let ctx = Arc::new(RunCtx::new(
        Arc::clone(&host),
        Arc::clone(&run_id),
        name.clone(),
    ));
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
        Arc::clone(&run_id),
        StartSpec {
            node_id: ctx.agent_node.to_string().into(),
            kind: NodeKind::Agent,
            name: name.clone().into(),
            instance_id: crate::event::InstanceId::Text((&*run_id).into()),
            parent_id: None,
            input: None,
            extra: Extra::new(),
        },
    );
    let mut guard = RunGuard {
        host: Arc::clone(&host),
        run_id: Arc::clone(&run_id),
        agent: Some(agent),
        held: Arc::clone(&ctx.held),
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
            Err(Aborted {
                run_id: run_id.to_string(),
                name,
            })
        }
    }
}

/// Ends the run exactly once; a run dropped half-way ends `aborted`.
struct RunGuard {
    host: Arc<dyn Host>,
    run_id: crate::ids::RunId,
    agent: Option<NodeRun>,
    held: Arc<crate::clock::HoldClock>,
}

impl RunGuard {
    fn end(&mut self, status: Status, error: Option<ErrorInfo>) {
        let Some(mut agent) = self.agent.take() else {
            return;
        };
        agent.add_held(self.held.snapshot().1);
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
            let error = (status == Status::Error).then(|| {
                crate::errors::error_info("panic", "the run's future panicked".to_owned())
            });
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
