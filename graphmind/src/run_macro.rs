//! `graphmind::run!`: a run scope around an async block.

/// Runs a future as one graphmind run: `graphmind::run!("handle-ticket", async { … }).await`.
///
/// Evaluates to a future of `Result<T, graphmind::Aborted>`: `Ok` with the block's output, or
/// `Err(Aborted)` when the debugger aborted the run at a gate inside it (the block's future is
/// then dropped at that gate, so nothing after it runs). Same as [`run`](crate::run()); with
/// feature `enabled` off it is the block itself, wrapped in `Ok`.
///
/// ```no_run
/// # async fn agent_loop() -> String { String::new() }
/// # async fn demo() {
/// match graphmind::run!("handle-ticket", async { agent_loop().await }).await {
///     Ok(answer) => println!("{answer}"),
///     Err(aborted) => eprintln!("{aborted}"),
/// }
/// # }
/// ```
#[cfg(feature = "enabled")]
#[macro_export]
macro_rules! run {
    ($name:expr, $future:expr $(,)?) => {
        $crate::run($name, $future)
    };
    ($($future:tt)*) => {
        ::core::compile_error!(
            "graphmind::run! takes the run's name first: `graphmind::run!(\"name\", async { … })`"
        )
    };
}

/// Runs a future as one graphmind run (compiled out: the block itself, wrapped in `Ok`).
#[cfg(not(feature = "enabled"))]
#[macro_export]
macro_rules! run {
    ($name:expr, $future:expr $(,)?) => {{
        let _ = $name;
        let __graphmind_future = $future;
        async move { ::core::result::Result::<_, $crate::Aborted>::Ok(__graphmind_future.await) }
    }};
    ($($future:tt)*) => {
        ::core::compile_error!(
            "graphmind::run! takes the run's name first: `graphmind::run!(\"name\", async { … })`"
        )
    };
}
