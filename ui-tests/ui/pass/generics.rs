//! Generic parameters, `impl Trait` arguments, references, lifetimes and `where` clauses.
use serde::Serialize;

#[graphmind::tool]
async fn describe<T: Serialize + Clone + std::fmt::Debug>(
    item: T,
    label: impl AsRef<str> + Serialize + Clone,
) -> String {
    format!("{}: {item:?}", label.as_ref())
}

#[graphmind::tool]
async fn first<'a, T>(items: &'a [T]) -> Option<T>
where
    T: Serialize + serde::de::DeserializeOwned + Clone + Sync,
{
    items.first().cloned()
}

#[graphmind::tool]
async fn fallible(n: u32) -> Result<u32, std::io::Error> {
    let parsed: u32 = "7".parse().map_err(std::io::Error::other)?;
    if n == 0 {
        return Err(std::io::Error::other("zero"));
    }
    Ok(parsed + n)
}

#[tokio::main]
async fn main() {
    assert_eq!(describe(3u8, "n").await, "n: 3");
    assert_eq!(first(&[1, 2]).await, Some(1));
    assert_eq!(fallible(1).await.unwrap(), 8);
}
