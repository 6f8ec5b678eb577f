//! A prompt call as a graphmind run: [`Instrument::graphmind`] on an agent, then
//! [`Graphmind::prompt`] (or [`Graphmind::run`] with a runner you configured).

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use rig_agent::agent::PromptResponse;
use rig_agent::completion::PromptError;
use rig_agent::{Agent, AgentRunner};
use rig_core::error::{ErrorKind, ErrorReport};
use rig_core::message::Message;

use crate::GraphmindHook;

/// `.graphmind()` on a rig [`Agent`]: its prompt calls, instrumented.
pub trait Instrument {
    /// The agent's instrumented prompt calls.
    fn graphmind(&self) -> Graphmind<'_>;
}

impl Instrument for Agent {
    fn graphmind(&self) -> Graphmind<'_> {
        Graphmind { agent: self }
    }
}

/// An agent's instrumented prompt calls ([`Instrument::graphmind`]).
#[derive(Clone, Copy)]
pub struct Graphmind<'a> {
    agent: &'a Agent,
}

impl std::fmt::Debug for Graphmind<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graphmind")
            .field("agent", &self.agent.name())
            .finish()
    }
}

impl Graphmind<'_> {
    /// `agent.prompt(prompt)`, instrumented: `.await` it like rig's runner.
    pub fn prompt(&self, prompt: impl Into<Message>) -> Prompt {
        self.run(self.agent.prompt(prompt))
    }

    /// A runner of this agent that you configured (`agent.prompt(…).max_turns(3)…`),
    /// instrumented.
    pub fn run(&self, runner: AgentRunner) -> Prompt {
        Prompt {
            runner: runner.add_hook(GraphmindHook::for_agent(self.agent)),
            name: self.agent.name().unwrap_or("agent").to_owned(),
            session: None,
        }
    }
}

/// An instrumented prompt call: `.await` gives rig's own
/// `Result<PromptResponse, PromptError>`.
///
/// Outside any graphmind run the call is a run of its own, named after the agent (agent node
/// `agent:<name>`, rig's `"agent"` when it has none), ending `error` when rig returns an
/// error. Inside a `graphmind::run!` it joins that run. When the debugger aborts a call that
/// is its own run, the call returns `PromptError::Report` with a report of kind
/// `ErrorKind::Cancelled` (message: graphmind's `Aborted`); inside an enclosing run, that run is aborted (its block is dropped at the
/// gate and it returns `Err(graphmind::Aborted)`).
#[must_use = "a prompt call does nothing until awaited"]
pub struct Prompt {
    runner: AgentRunner,
    name: String,
    session: Option<graphmind::Session>,
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt").field("name", &self.name).finish()
    }
}

impl Prompt {
    /// Configures the runner further (`.with(|r| r.max_turns(3))`).
    pub fn with(self, configure: impl FnOnce(AgentRunner) -> AgentRunner) -> Self {
        Self {
            runner: configure(self.runner),
            ..self
        }
    }

    /// Reports to `session` instead of the default one (when the call is its own run).
    pub fn session(self, session: &graphmind::Session) -> Self {
        Self {
            session: Some(session.clone()),
            ..self
        }
    }
}

impl IntoFuture for Prompt {
    type Output = Result<PromptResponse, PromptError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        let Self {
            runner,
            name,
            session,
        } = self;
        Box::pin(async move {
            if graphmind::current_run_id().is_some() {
                return runner.await;
            }
            let out = match session {
                Some(gm) => gm.run_result(name, runner.into_future()).await,
                None if graphmind::node::Node::enabled() => {
                    graphmind::run_result(name, runner.into_future()).await
                }
                None => return runner.await,
            };
            match out {
                Ok(out) => out,
                Err(aborted) => Err(PromptError::from(ErrorReport::new(
                    ErrorKind::Cancelled,
                    aborted.to_string(),
                ))),
            }
        })
    }
}
