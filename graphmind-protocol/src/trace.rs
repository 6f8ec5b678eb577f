//! Trace context of a run, as the hub's OTLP export names it: a run is a trace (its id derived
//! from the run id alone), each node execution a span (its id from the run, node and instance
//! ids). An app that hands a node's `traceparent` to a service it calls (an MCP server, say)
//! makes that service's spans children of the node's span in the exported trace.

/// A 64-bit FNV-1a hash of `parts`, separated so `("ab","c")` and `("a","bc")` differ.
fn fnv(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325_u64 ^ seed;
    for p in parts {
        for b in *p {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // Mix the low bits up (FNV leaves them weak for short inputs).
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// The trace id of a run: 16 bytes derived from the run id alone, so exporting a run twice
/// (live, then `graphmind export`) gives the same trace. Never all zero.
pub fn trace_id(run_id: &str) -> [u8; 16] {
    let a = fnv(1, &[run_id.as_bytes()]);
    let b = fnv(2, &[run_id.as_bytes()]).max(1);
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&a.to_be_bytes());
    id[8..].copy_from_slice(&b.to_be_bytes());
    id
}

/// The span id of one node execution (the `nth` execution with this node and instance id).
pub fn span_id(run_id: &str, node_id: &str, instance_id: &str, nth: usize) -> [u8; 8] {
    let nth = nth.to_string();
    fnv(
        3,
        &[
            run_id.as_bytes(),
            node_id.as_bytes(),
            instance_id.as_bytes(),
            nth.as_bytes(),
        ],
    )
    .max(1)
    .to_be_bytes()
}

/// The W3C `traceparent` of the first execution of node `node_id` with `instance_id` in run
/// `run_id`: `00-<trace id>-<span id>-01`, the ids the hub's OTLP export gives that run and
/// that execution's span.
pub fn traceparent(run_id: &str, node_id: &str, instance_id: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    fn put(out: &mut String, bytes: &[u8]) {
        for b in bytes {
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
    let mut out = String::with_capacity(55);
    out.push_str("00-");
    put(&mut out, &trace_id(run_id));
    out.push('-');
    put(&mut out, &span_id(run_id, node_id, instance_id, 1));
    out.push_str("-01");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_names_the_runs_trace_and_the_executions_span() {
        let tp = traceparent("run_a", "tool:add", "call_1");
        let parts: Vec<&str> = tp.split('-').collect();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0], "00");
        assert_eq!(parts[1].len(), 32);
        assert_eq!(parts[2].len(), 16);
        assert_eq!(parts[3], "01");
        let trace: String = trace_id("run_a")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(parts[1], trace);
        assert_ne!(tp, traceparent("run_a", "tool:add", "call_2"));
    }
}
