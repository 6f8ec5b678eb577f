//! Hostile input: seeded mutations of real frames (byte edits, splices, truncations, deep
//! nesting, and structural edits of the decoded JSON) never make `parse` or `shrink_payload`
//! panic, and whatever parses survives a serialize/parse round trip unchanged.
//!
//! The run is deterministic. `GM_MUTATION_SEED` and `GM_MUTATION_ROUNDS` change the seed and
//! the number of mutants for a longer hunt; a failure prints the seed and the input.

use std::panic::{AssertUnwindSafe, catch_unwind};

use graphmind_protocol::{Parsed, parse, parse_value, shrink_payload};
use serde_json::{Map, Value, json};

const FRAMES: &str = include_str!("../fixtures/py-client-frames.ndjson");

/// xorshift64*: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            usize::try_from(self.next() % n as u64).unwrap_or(0)
        }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn corpus() -> Vec<String> {
    let mut frames: Vec<String> = FRAMES
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    // Frames a debugger sends, which the Python fixtures do not contain.
    frames.extend(
        [
            r#"{"gm":1,"seq":0,"ts":1,"runId":"*","type":"hello.ack","payload":{"sessionId":"s1","resumeToken":"t","breakpoints":[{"point":"before","kind":"tool","name":"get_weather"}],"mode":"run"}}"#,
            r#"{"gm":1,"seq":1,"ts":2,"runId":"r1","type":"exec.resume","payload":{"pauseId":"p1","action":"inject","value":{"city":"Oslo","celsius":-3.5}}}"#,
            r#"{"gm":1,"seq":2,"ts":3,"runId":"*","type":"breakpoint.set","payload":{"breakpoints":[{"point":"error"}]}}"#,
            r#"{"gm":1,"seq":3,"ts":4,"runId":"*","type":"mode.set","payload":{"mode":"step"}}"#,
            r#"{"gm":1,"seq":4,"ts":5,"runId":"*","type":"breakpoint.clear","payload":{}}"#,
        ]
        .map(str::to_owned),
    );
    frames
}

/// Bytes that matter to a JSON parser.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\\",
    "\\u",
    "\\ud800",
    "0",
    "-",
    "1e999",
    "-0",
    "1.5",
    "9007199254740993",
    "null",
    "true",
    "false",
    "\u{0}",
    "é",
    "😀",
    " ",
    "\"gm\":2,",
];

fn mutate_text(rng: &mut Rng, frames: &[String]) -> String {
    let base = rng.pick(frames).clone();
    let mut bytes = base.into_bytes();
    for _ in 0..=rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(7) {
            0 => {
                let tok = rng.pick(TOKENS).as_bytes();
                bytes.splice(at..at, tok.iter().copied());
            }
            1 => {
                let end = (at + 1 + rng.below(16)).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            2 => bytes.truncate(at),
            3 if at < bytes.len() => bytes[at] = u8::try_from(rng.below(256)).unwrap_or(0),
            4 => {
                let end = (at + rng.below(64)).min(bytes.len());
                let copy = bytes[at.min(end)..end].to_vec();
                bytes.splice(at..at, copy);
            }
            5 => {
                let other = rng.pick(frames).as_bytes();
                let from = rng.below(other.len());
                bytes.truncate(at);
                bytes.extend_from_slice(&other[from..]);
            }
            _ => {
                let n = 1 + rng.below(300);
                let nest = format!("{}{}", "[".repeat(n), "]".repeat(n));
                bytes.splice(at..at, nest.into_bytes());
            }
        }
    }
    // Frames arrive as WebSocket text, which is UTF-8 by then.
    String::from_utf8_lossy(&bytes).into_owned()
}

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 3 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 1),
        2 => json!(rng.next() >> rng.below(64)),
        3 => json!(-(i64::try_from(rng.next() >> 2).unwrap_or(0))),
        4 => json!(f64::from(u32::try_from(rng.below(1 << 20)).unwrap_or(0)) / 7.0),
        5 => Value::String(rng.pick(TOKENS).repeat(rng.below(5))),
        6 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..rng.below(4))
                .map(|i| (format!("k{i}"), random_value(rng, depth + 1)))
                .collect(),
        ),
    }
}

/// Replaces, removes or adds one member somewhere in `v` (corpus values are shallow, so the
/// walk down is short).
fn mutate_value(rng: &mut Rng, v: &mut Value) {
    let descend = rng.below(3) != 0;
    match v {
        Value::Object(map) if !map.is_empty() && descend => {
            let i = rng.below(map.len());
            if let Some(next) = map.values_mut().nth(i) {
                mutate_value(rng, next);
            }
        }
        Value::Array(items) if !items.is_empty() && descend => {
            let i = rng.below(items.len());
            mutate_value(rng, &mut items[i]);
        }
        Value::Object(map) => {
            let key = map.keys().nth(rng.below(map.len().max(1))).cloned();
            match (rng.below(3), key) {
                (0, Some(k)) => {
                    map.remove(&k);
                }
                (1, Some(k)) => {
                    map.insert(k, random_value(rng, 0));
                }
                _ => {
                    map.insert(format!("x{}", rng.below(100)), random_value(rng, 0));
                }
            }
        }
        _ => *v = random_value(rng, 0),
    }
}

fn mutate_structure(rng: &mut Rng, frames: &[String]) -> String {
    let mut v: Value =
        serde_json::from_str(rng.pick(frames).as_str()).expect("corpus frame is JSON");
    for _ in 0..=rng.below(2) {
        mutate_value(rng, &mut v);
    }
    serde_json::to_string(&v).expect("a Value serializes")
}

/// What must hold for any input: no panic; an accepted frame re-serializes to a frame that
/// parses to the same envelope and serializes to the same bytes.
fn check(input: &str) -> Result<(), String> {
    let outcome =
        catch_unwind(AssertUnwindSafe(|| parse(input))).map_err(|_| "parse panicked".to_owned())?;
    let env = match outcome {
        Parsed::Ok(env) | Parsed::UnknownType(env) => env,
        Parsed::VersionMismatch(_) | Parsed::Invalid(_) => return Ok(()),
    };
    let out = env.to_json();
    let again = catch_unwind(AssertUnwindSafe(|| parse(&out)))
        .map_err(|_| format!("re-parse panicked on {out}"))?;
    let same = match &again {
        Parsed::Ok(e) | Parsed::UnknownType(e) => e.to_json() == out,
        _ => false,
    };
    if !same {
        return Err(format!("round trip changed it: {out} -> {again:?}"));
    }
    // Nothing was lost or invented on the way in: the output says what the input said.
    let before: Value =
        serde_json::from_str(input).map_err(|e| format!("accepted non-JSON: {e}"))?;
    let after: Value = serde_json::from_str(&out).map_err(|e| format!("wrote non-JSON: {e}"))?;
    if !same_json(&before, &after) {
        return Err(format!("accepted frame changed: {out}"));
    }
    Ok(())
}

/// JSON equality, except that numbers compare by value (`5` and `5.0` are the same number:
/// a float field written from an integer keeps its value), and an optional field sent as
/// `null` may come back absent (the parser tolerates `"heldMs": null` as "not given"). A
/// present `null` output, input or inject value is data and must survive.
fn same_json(a: &Value, b: &Value) -> bool {
    const NULL_IS_DATA: [&str; 3] = ["output", "input", "value"];
    let members = |x: &Map<String, Value>, y: &Map<String, Value>| {
        x.iter().all(|(k, a)| match y.get(k) {
            Some(b) => same_json(a, b),
            None => a.is_null() && !NULL_IS_DATA.contains(&k.as_str()),
        })
    };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => members(x, y) && members(y, x),
        _ => a == b,
    }
}

#[test]
fn mutated_frames_never_panic_and_accepted_ones_round_trip() {
    let seed = env_u64("GM_MUTATION_SEED", 0x6a09_e667_f3bc_c908) | 1;
    let rounds = env_u64("GM_MUTATION_ROUNDS", 20_000);
    let frames = corpus();
    let mut rng = Rng(seed);
    let (mut accepted, mut rejected) = (0u32, 0u32);
    for round in 0..rounds {
        let input = if round % 2 == 0 {
            mutate_text(&mut rng, &frames)
        } else {
            mutate_structure(&mut rng, &frames)
        };
        if let Err(why) = check(&input) {
            panic!("seed {seed:#x}, round {round}: {why}\ninput: {input}");
        }
        match parse(&input) {
            Parsed::Ok(_) | Parsed::UnknownType(_) => accepted += 1,
            _ => rejected += 1,
        }
    }
    // Both sides of the parser were exercised, not just its first check.
    assert!(accepted > 1000, "only {accepted} mutants accepted");
    assert!(rejected > 1000, "only {rejected} mutants rejected");
}

#[test]
fn hand_built_values_deeper_than_serde_allows_are_handled() {
    // parse_value takes values built in code, which have no depth cap of their own.
    let mut deep = json!({"nodeId": "tool:x", "kind": "tool", "name": "x"});
    let mut input = Value::Null;
    for _ in 0..200_000 {
        input = Value::Array(vec![input]);
    }
    deep["input"] = input;
    let frame = json!({"gm": 1, "seq": 1, "ts": 1, "runId": "r", "type": "node.started"});
    let mut frame = frame.as_object().cloned().expect("object");
    frame.insert("payload".into(), deep);
    // A stack overflow aborts the whole test binary, so reaching the assertion is the test.
    let outcome = parse_value(Value::Object(frame));
    assert!(
        matches!(&outcome, Parsed::Invalid(why) if why.contains("nesting")),
        "{outcome:?}"
    );
}

#[test]
fn shrinking_mutated_payloads_never_panics_and_meets_the_budget() {
    let frames = corpus();
    let mut rng = Rng(env_u64("GM_MUTATION_SEED", 0xbb67_ae85_84ca_a73b) | 1);
    for round in 0..2_000 {
        let mut v: Value =
            serde_json::from_str(rng.pick(&frames).as_str()).expect("corpus frame is JSON");
        let Some(payload) = v.get_mut("payload") else {
            continue;
        };
        mutate_value(&mut rng, payload);
        // Grow one field past the budget now and then, and nest one deeply.
        if let Value::Object(map) = payload {
            if round % 3 == 0 {
                map.insert("big".into(), Value::String("x".repeat(40_000)));
            }
            if round % 5 == 0 {
                let mut nested = Value::Null;
                for _ in 0..200 {
                    nested = Value::Array(vec![nested]);
                }
                map.insert("nested".into(), nested);
            }
        }
        let Value::Object(mut map) = payload.take() else {
            continue;
        };
        let budget = 4_096;
        let before: Map<String, Value> = map.clone();
        let report = catch_unwind(AssertUnwindSafe(|| shrink_payload(&mut map, budget)))
            .unwrap_or_else(|_| panic!("round {round}: shrink panicked on {before:?}"));
        let len = serde_json::to_string(&map).expect("serializes").len();
        assert_eq!(report.final_bytes, len, "round {round}: report is wrong");
        assert!(
            len <= budget,
            "round {round}: {len} bytes left of {before:?}"
        );
        if !report.shrunk {
            assert_eq!(map, before, "round {round}: changed without saying so");
        }
    }
}
