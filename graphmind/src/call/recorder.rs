//! The unit tests' host: records every event in memory, enabled and detached until a test
//! says otherwise.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use graphmind_protocol::{Extra, Message, Mode, NodeKind, PausePoint, SdkInfo};

use crate::call::Host;
use crate::gate::{GateSink, Registry};

/// An in-memory host: enabled unless `disabled`, attached (its gates may hold, though no
/// breakpoint holds them) while `attached`; every event lands in `events`.
#[derive(Default)]
pub(crate) struct Recorder {
    pub(crate) disabled: AtomicBool,
    pub(crate) attached: AtomicBool,
    pub(crate) events: Mutex<Vec<Message>>,
    gates: Registry,
    implicit: crate::implicit_run::ImplicitRun,
}

impl GateSink for Recorder {
    fn emit_event(&self, _run_id: &str, message: Message) {
        self.events.lock().expect("lock").push(message);
    }
}

impl Host for Recorder {
    fn enabled(&self) -> bool {
        !self.disabled.load(Ordering::Relaxed)
    }
    fn attached(&self) -> bool {
        self.attached.load(Ordering::Relaxed)
    }
    fn emit(&self, run_id: &str, message: Message) -> Option<u64> {
        self.emit_event(run_id, message);
        None
    }
    fn gate_rule(&self, _: NodeKind, _: &str, _: PausePoint) -> (bool, Mode) {
        (false, Mode::Run)
    }
    fn gates(&self) -> &Registry {
        &self.gates
    }
    fn pause_timeout(&self) -> Option<Duration> {
        None
    }
    fn token_interval(&self) -> Duration {
        // Long enough that "nothing before the interval" holds on a loaded machine.
        Duration::from_millis(250)
    }
    fn app(&self) -> String {
        "t".into()
    }
    fn implicit(&self) -> &crate::implicit_run::ImplicitRun {
        &self.implicit
    }
    fn sdk(&self) -> SdkInfo {
        SdkInfo {
            name: "t".into(),
            version: "0".into(),
            extra: Extra::new(),
        }
    }
    fn meta(&self) -> Extra {
        Extra::new()
    }
}
