//! Instrumented futures stay `Send` when the original is: they can be spawned on tokio —
//! free fns, `&self` methods, `#[async_trait]` methods, streams, model steps and `run!`.

mod macro_support;

use futures_util::{Stream, StreamExt, stream};
use graphmind_tests::FakeDebugger;
use macro_support::{attached, finished, run_finished};

#[graphmind::tool]
async fn double(n: u64) -> u64 {
    tokio::task::yield_now().await;
    n * 2
}

struct Shop {
    name: String,
}

impl Shop {
    #[graphmind::tool]
    async fn greet(&self, who: String) -> Result<String, String> {
        tokio::task::yield_now().await;
        Ok(format!("{} greets {who}", self.name))
    }
}

#[async_trait::async_trait]
trait Search {
    async fn search(&self, query: String) -> Vec<String>;
}

#[async_trait::async_trait]
impl Search for Shop {
    #[graphmind::tool]
    async fn search(&self, query: String) -> Vec<String> {
        tokio::task::yield_now().await;
        vec![format!("{}:{query}", self.name)]
    }
}

#[graphmind::model_step]
async fn words(prompt: String) -> Result<impl Stream<Item = String> + Send, String> {
    Ok(stream::iter(
        prompt.split(' ').map(str::to_owned).collect::<Vec<_>>(),
    ))
}

fn assert_send<T: Send>(value: T) -> T {
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instrumented_futures_spawn_on_tokio() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let shop = std::sync::Arc::new(Shop {
        name: "shop".into(),
    });
    let joined = tokio::spawn(assert_send({
        let gm = gm.clone();
        async move {
            gm.run("r", async move {
                let a = tokio::spawn(assert_send(double(21)))
                    .await
                    .expect("spawned");
                let b = shop.greet("ann".into()).await.expect("ok");
                let c = shop.search("q".into()).await;
                let d: Vec<String> = words("x y".into()).await.expect("ok").collect().await;
                (a, b, c, d)
            })
            .await
        }
    }))
    .await
    .expect("joined")
    .expect("not aborted");
    assert_eq!(
        joined,
        (
            42,
            "shop greets ann".to_owned(),
            vec!["shop:q".to_owned()],
            vec!["x".to_owned(), "y".to_owned()]
        )
    );
    run_finished(&hub).await;
    for node in ["tool:greet", "tool:search", "llm:step"] {
        assert_eq!(finished(&hub, node).len(), 1, "{node} was instrumented");
    }
    gm.dispose().await;
}
