//! Golden fixtures: every frame the Python client wrote parses, re-serializes without losing
//! a field, and the re-serialized frame still validates against the wire schema.

use graphmind_protocol::{Message, Parsed, parse};
use serde_json::Value;

const FRAMES: &str = include_str!("../fixtures/py-client-frames.ndjson");
const SCHEMA: &str = include_str!("../fixtures/wire-v1.schema.json");

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

#[test]
fn every_python_frame_round_trips_without_losing_a_field() {
    let schema = validator();
    let mut count = 0;
    for (i, line) in FRAMES
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let Parsed::Ok(env) = parse(line) else {
            panic!("line {}: not ok: {:?}", i + 1, parse(line));
        };
        assert!(!matches!(env.message, Message::Unknown { .. }));
        let original: Value = serde_json::from_str(line).expect("fixture is JSON");
        let again: Value = serde_json::from_str(&env.to_json()).expect("output is JSON");
        assert_eq!(original, again, "line {} changed in a round trip", i + 1);
        assert!(schema.is_valid(&again), "line {} fails the schema", i + 1);
        count += 1;
    }
    assert_eq!(
        count,
        FRAMES.lines().filter(|l| !l.trim().is_empty()).count()
    );
    assert!(count >= 40);
}

#[test]
fn serialization_is_compact_and_in_wire_order() {
    let line = FRAMES.lines().next().expect("one frame");
    let Parsed::Ok(env) = parse(line) else {
        panic!("not ok")
    };
    let out = env.to_json();
    assert!(out.starts_with(
        r#"{"gm":1,"seq":0,"ts":1796004170840,"runId":"*","type":"hello","payload":{"#
    ));
    assert!(!out.contains(", ") && !out.contains("\": "));
}

#[test]
fn unknown_fields_survive_everywhere() {
    let f = r#"{"gm":1,"seq":9,"ts":5,"runId":"run_a","type":"node.started","payload":{"nodeId":"tool:x","kind":"tool","name":"x","instanceId":"c1","future":{"a":[1,2]},"input":{"q":1}},"trace":"t-1"}"#;
    let Parsed::Ok(env) = parse(f) else {
        panic!("not ok")
    };
    let a: Value = serde_json::from_str(f).expect("json");
    let b: Value = serde_json::from_str(&env.to_json()).expect("json");
    assert_eq!(a, b);
}

#[test]
fn unknown_types_are_kept_opaque() {
    let f = r#"{"gm":1,"seq":1,"ts":5,"runId":"run_a","type":"node.future","payload":{"x":[1,{"y":null}]}}"#;
    let Parsed::UnknownType(env) = parse(f) else {
        panic!("not unknown-type")
    };
    assert_eq!(env.message.type_name(), "node.future");
    assert_eq!(env.to_json(), f);
}
