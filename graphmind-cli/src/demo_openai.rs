//! `graphmind demo --agent openai`: the async-openai travel agent of
//! `graphmind_examples::trip_agent` (through graphmind-openai) against the local mock OpenAI
//! server of `graphmind-openai-mock`, in this process. Two model steps (`llm:step`) and two
//! parallel tool calls (`tool:get_weather`, `tool:convert`, named by the model's call ids).
//!
//! Behind the CLI's feature `demo-openai` (off by default): it links async-openai and its
//! HTTP client.

/// What a demo agent answered: its answer or why it gave up, or the debugger's abort.
pub(crate) type Outcome = Result<Result<String, String>, graphmind::Aborted>;

#[cfg(feature = "demo-openai")]
pub(crate) use graphmind_examples::trip_agent::{APP, RUN};

/// The travel agent's app name (as in `graphmind_examples::trip_agent`).
#[cfg(not(feature = "demo-openai"))]
pub(crate) const APP: &str = "openai-agent";
/// The travel agent's run name (as in `graphmind_examples::trip_agent`).
#[cfg(not(feature = "demo-openai"))]
pub(crate) const RUN: &str = "trip-agent";

/// Whether this build can run the travel agent (`Err` says how to get one that can).
pub(crate) fn available() -> Result<(), String> {
    if cfg!(not(feature = "demo-openai")) {
        return Err(
            "--agent openai needs a graphmind built with the feature demo-openai \
             (cargo install graphmind-cli --features demo-openai, or in the repository: \
             cargo run -p graphmind-cli --features demo-openai -- demo --agent openai)"
                .to_owned(),
        );
    }
    Ok(())
}

/// Starts the mock OpenAI server and the travel agent's run on it.
#[cfg(feature = "demo-openai")]
pub(crate) async fn spawn(json_out: bool) -> Result<tokio::task::JoinHandle<Outcome>, String> {
    use graphmind_examples::trip_agent;

    let mocked = trip_agent::mocked()
        .await
        .map_err(|e| format!("cannot start the mock OpenAI server: {e}"))?;
    let line = format!(
        "question: {}\ngraphmind demo: the agent asks the mock OpenAI server at {} (async-openai \
         through graphmind-openai); the model calls get_weather and convert in parallel, then \
         answers. Set breakpoints in the viewer (llm:step, the tools) and run it again to hold \
         at its gates.",
        trip_agent::QUESTION,
        mocked.mock.base
    );
    if json_out {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
    Ok(tokio::spawn(async move {
        let trip_agent::Mocked { mock, client } = mocked;
        let out = graphmind::run!(RUN, trip_agent::trip_agent(&client, "tools"))
            .await
            .map(|r| r.map_err(|e| e.to_string()));
        drop(mock);
        out
    }))
}

/// This build has no travel agent ([`available`] said so first).
#[cfg(not(feature = "demo-openai"))]
pub(crate) async fn spawn(_json_out: bool) -> Result<tokio::task::JoinHandle<Outcome>, String> {
    available().map(|()| tokio::spawn(async { Ok(Err(String::new())) }))
}
