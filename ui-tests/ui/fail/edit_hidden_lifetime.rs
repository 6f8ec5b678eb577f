//! A by-value argument whose type hides a lifetime (`Name` meaning `Name<'a>`): the macro
//! could not tell it from an owned type, but an `async fn` may not hide it (E0726), and only
//! an `async fn` is made editable; written out (`Name<'_>`) it shows the `'` that makes the
//! call not editable.

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Name<'a> {
    pub first: &'a str,
}

#[graphmind::tool]
async fn greet(name: Name) -> String {
    name.first.to_owned()
}

fn main() {
    let _ = greet(Name { first: "a" });
}
