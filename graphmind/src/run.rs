//! Run scopes: `run.started`, the agent node, `run.finished`, and abort.
//!
//! A run is a future wrapped by [`run`] (or [`Session::run`](crate::Session::run), or the
//! `run!` macro). Everything instrumented inside it — on the same task — reports to that run
//! and hangs under its agent node. When the debugger answers `abort` at any gate inside it,
//! the run's future is dropped (so nothing after the gate executes) and the scope returns
//! [`Err(Aborted)`](Aborted).

#[cfg(feature = "enabled")]
#[cfg(feature = "enabled")]
mod driver;
#[cfg(feature = "enabled")]
pub(crate) use driver::run_in;

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
    #[cfg(feature = "enabled")]
    return run_in(None, name.into(), fut, |_: &F::Output| None).await;
    #[cfg(not(feature = "enabled"))]
    {
        let _ = name;
        Ok(fut.await)
    }
}

/// Like [`run`], for a future returning `Result`: an `Err` ends the run with status `error`
/// (its `Display` as the message) and is returned as `Ok(Err(e))`.
pub async fn run_result<F, T, E>(name: impl Into<String>, fut: F) -> Result<Result<T, E>, Aborted>
where
    F: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    #[cfg(feature = "enabled")]
    return run_in(None, name.into(), fut, |out: &Result<T, E>| {
        out.as_ref().err().map(|e| {
            crate::errors::error_info(crate::errors::short_type_name::<E>(), e.to_string())
        })
    })
    .await;
    #[cfg(not(feature = "enabled"))]
    {
        let _ = name;
        Ok(fut.await)
    }
}

/// Carries the current run (and the hold clocks of enclosing [`time::timeout`]s) into a
/// future that will run elsewhere, e.g. on `tokio::spawn`: calls inside it report to the same
/// run, hang under its agent node, and an abort at their gates ends that run (the spawned
/// future then stays pending until its runtime shuts down: it can produce no value).
///
/// [`time::timeout`]: crate::time::timeout
///
/// ```no_run
/// # async fn work() -> u32 { 1 }
/// # async fn demo() {
/// let out = graphmind::run("fan-out", async {
///     let task = tokio::spawn(graphmind::in_current_run(work()));
///     task.await.unwrap_or_default()
/// })
/// .await;
/// # let _ = out;
/// # }
/// ```
pub fn in_current_run<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    #[cfg(feature = "enabled")]
    return crate::call::scope::Scope::current().enter(fut);
    #[cfg(not(feature = "enabled"))]
    fut
}

/// The id of the run the calling task is in (inside [`run()`], [`run_result`], `run!` or a
/// future wrapped by [`in_current_run`]), e.g. for [`Session::emit`](crate::Session::emit);
/// `None` outside any run, and when the session is disabled or compiled out.
///
/// ```no_run
/// # async fn demo() {
/// let _ = graphmind::run("ticket", async {
///     let id = graphmind::current_run_id().expect("inside a run");
///     assert!(id.starts_with("run_"));
/// })
/// .await;
/// # }
/// ```
#[must_use]
pub fn current_run_id() -> Option<String> {
    #[cfg(feature = "enabled")]
    return crate::call::scope::Scope::run().map(|r| r.run_id.to_string());
    #[cfg(not(feature = "enabled"))]
    None
}

impl crate::Session {
    /// [`run_result`] on this session instead of the default one.
    pub async fn run_result<F, T, E>(
        &self,
        name: impl Into<String>,
        fut: F,
    ) -> Result<Result<T, E>, Aborted>
    where
        F: Future<Output = Result<T, E>>,
        E: std::fmt::Display,
    {
        #[cfg(feature = "enabled")]
        {
            let host: std::sync::Arc<dyn crate::call::Host> = self.inner().clone();
            run_in(Some(host), name.into(), fut, |out: &Result<T, E>| {
                out.as_ref().err().map(|e| {
                    crate::errors::error_info(crate::errors::short_type_name::<E>(), e.to_string())
                })
            })
            .await
        }
        #[cfg(not(feature = "enabled"))]
        {
            let _ = name;
            Ok(fut.await)
        }
    }

    /// [`run`] on this session instead of the default one.
    pub async fn run<F: Future>(
        &self,
        name: impl Into<String>,
        fut: F,
    ) -> Result<F::Output, Aborted> {
        #[cfg(feature = "enabled")]
        {
            let host: std::sync::Arc<dyn crate::call::Host> = self.inner().clone();
            run_in(Some(host), name.into(), fut, |_: &F::Output| None).await
        }
        #[cfg(not(feature = "enabled"))]
        {
            let _ = name;
            Ok(fut.await)
        }
    }
}
