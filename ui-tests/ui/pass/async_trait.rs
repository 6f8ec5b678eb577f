//! `#[async_trait]` impls (the impl's attribute runs first, so `#[graphmind::tool]` sees the
//! desugared method) and native `async fn` in traits.
use async_trait::async_trait;

#[async_trait]
pub trait Search {
    async fn search(&self, query: String) -> Result<Vec<String>, String>;
}

pub struct Web;

#[async_trait]
impl Search for Web {
    #[graphmind::tool]
    async fn search(&self, query: String) -> Result<Vec<String>, String> {
        Ok(vec![query])
    }
}

/// `?Send` futures and a default method: the desugared shapes without `Send`.
#[async_trait(?Send)]
pub trait Local {
    #[graphmind::tool(skip(n))]
    async fn local(&self, n: std::rc::Rc<u32>) -> u32 {
        *n + 1
    }
}

pub struct Here;

#[async_trait(?Send)]
impl Local for Here {}

pub trait Lookup {
    fn lookup(&self, id: u32) -> impl Future<Output = Option<String>> + Send;
}

pub struct Db;

impl Lookup for Db {
    #[graphmind::tool]
    async fn lookup(&self, id: u32) -> Option<String> {
        (id == 1).then(|| "one".to_owned())
    }
}

#[tokio::main]
async fn main() {
    assert_eq!(Web.search("q".into()).await.unwrap(), ["q"]);
    assert_eq!(Db.lookup(1).await.as_deref(), Some("one"));
    assert_eq!(Here.local(std::rc::Rc::new(1)).await, 2);
    let spawned = tokio::spawn(async { Web.search("s".into()).await });
    assert!(spawned.await.unwrap().is_ok());
}
