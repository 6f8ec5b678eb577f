//! What `#[graphmind::tool]` records for each shape of fn: node id and name (`name = …`),
//! instanceId (`call_id = …`, else generated), input keyed by parameter (`skip(…)` left
//! out), output — for free fns, `&self` / `&mut self` methods, generics, `impl Trait`
//! arguments and `#[async_trait]` methods.

mod macro_support;

use graphmind_tests::FakeDebugger;
use macro_support::{attached, run_finished};
use serde_json::{Value, json};

#[derive(Clone, serde::Serialize)]
struct Secret(String);

#[graphmind::tool(name = "find_order", call_id = call, skip(token))]
async fn lookup(call: Option<String>, id: String, token: Secret) -> Result<String, String> {
    let _ = (call, token);
    Ok(format!("order {id}"))
}

struct Cart {
    items: Vec<String>,
}

impl Cart {
    #[graphmind::tool]
    async fn count(&self, tag: impl Into<String> + serde::Serialize + Clone) -> usize {
        let _: String = tag.into();
        self.items.len()
    }

    #[graphmind::tool]
    async fn add(&mut self, item: String) -> usize {
        self.items.push(item);
        self.items.len()
    }
}

#[graphmind::tool]
async fn pair<T: serde::Serialize + serde::de::DeserializeOwned + Clone + Send>(
    a: T,
    b: T,
) -> (T, T) {
    (a, b)
}

#[async_trait::async_trait]
trait Search {
    async fn search(&self, query: String) -> Vec<String>;
}

#[async_trait::async_trait]
impl Search for Cart {
    #[graphmind::tool]
    async fn search(&self, query: String) -> Vec<String> {
        self.items
            .iter()
            .filter(|i| i.contains(&query))
            .cloned()
            .collect()
    }
}

/// `(nodeId, name, instanceId, input)` of every tool node.started, `(nodeId, output)` of
/// every tool node.finished.
type Started = Vec<(String, String, String, Value)>;

fn tool_nodes(hub: &FakeDebugger) -> (Started, Vec<(String, Value)>) {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let started = hub
        .frames_of("node.started")
        .iter()
        .map(|f| f.payload().clone())
        .filter(|p| p["kind"] == "tool")
        .map(|p| {
            (
                s(&p["nodeId"]),
                s(&p["name"]),
                s(&p["instanceId"]),
                p["input"].clone(),
            )
        })
        .collect();
    let finished = hub
        .frames_of("node.finished")
        .iter()
        .map(|f| f.payload().clone())
        .filter(|p| p["nodeId"].as_str().is_some_and(|n| n.starts_with("tool:")))
        .map(|p| (s(&p["nodeId"]), p["output"].clone()))
        .collect();
    (started, finished)
}

#[tokio::test]
async fn every_shape_records_its_node_identity_input_and_output() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let mut cart = Cart {
        items: vec!["apple".into()],
    };
    let out = gm
        .run("r", async {
            let a = lookup(
                Some("call_abc".into()),
                "ORD-1".into(),
                Secret("s3cr3t".into()),
            )
            .await;
            let b = lookup(None, "ORD-2".into(), Secret("s3cr3t".into())).await;
            let c = cart.add("pear".into()).await;
            let d = cart.count("fruit").await;
            let e = pair(1u8, 2u8).await;
            let f = cart.search("pe".into()).await;
            (a, b, c, d, e, f)
        })
        .await
        .expect("not aborted");
    assert_eq!(
        out,
        (
            Ok("order ORD-1".into()),
            Ok("order ORD-2".into()),
            2,
            2,
            (1, 2),
            vec!["pear".to_owned()]
        )
    );
    run_finished(&hub).await;
    let (started, finished) = tool_nodes(&hub);
    let generated = &started[1].2;
    assert!(
        generated.starts_with("call_") && generated != "call_abc",
        "generated id: {generated}"
    );
    let expected_started = [
        (
            "tool:find_order",
            "find_order",
            "call_abc",
            json!({"call": "call_abc", "id": "ORD-1"}),
        ),
        (
            "tool:find_order",
            "find_order",
            generated.as_str(),
            json!({"call": null, "id": "ORD-2"}),
        ),
        ("tool:add", "add", "*", json!({"item": "pear"})),
        ("tool:count", "count", "*", json!({"tag": "fruit"})),
        ("tool:pair", "pair", "*", json!({"a": 1, "b": 2})),
        ("tool:search", "search", "*", json!({"query": "pe"})),
    ];
    assert_eq!(started.len(), expected_started.len());
    for (got, want) in started.iter().zip(&expected_started) {
        assert_eq!(
            (got.0.as_str(), got.1.as_str(), &got.3),
            (want.0, want.1, &want.3)
        );
        if want.2 != "*" {
            assert_eq!(got.2, want.2);
        }
    }
    assert!(
        !hub.frames().iter().any(|f| f.text.contains("s3cr3t")),
        "skipped arguments are never sent"
    );
    assert_eq!(
        finished,
        [
            ("tool:find_order".to_owned(), json!("order ORD-1")),
            ("tool:find_order".to_owned(), json!("order ORD-2")),
            ("tool:add".to_owned(), json!(2)),
            ("tool:count".to_owned(), json!(2)),
            ("tool:pair".to_owned(), json!([1, 2])),
            ("tool:search".to_owned(), json!(["pear"])),
        ]
    );
    gm.dispose().await;
}
