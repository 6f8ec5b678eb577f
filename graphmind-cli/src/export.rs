//! OpenTelemetry export from the command line: the `--otlp` flags of `graphmind serve`
//! ([`OtlpArgs`]) and `graphmind export <runId…>` (stored runs, to a collector or a file).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use graphmind_hub::otlp::{MapOptions, OtlpConfig};

use graphmind_connect::paths;

/// The `--otlp` flags (of `serve` and `export`).
#[derive(Args, Debug, Clone, Default)]
pub struct OtlpArgs {
    /// Export runs to an OpenTelemetry collector: OTLP over HTTP/protobuf, an http:// URL
    /// (`/v1/traces` is added when it has no path), e.g. http://127.0.0.1:4318. https is not
    /// supported: point it at a local collector that forwards over TLS.
    #[arg(long, value_name = "ENDPOINT")]
    pub otlp: Option<String>,
    /// A header sent with every OTLP request, NAME=VALUE (repeatable; API keys).
    #[arg(long = "otlp-header", value_name = "NAME=VALUE")]
    pub otlp_header: Vec<String>,
    /// Export message content too (inputs and outputs as the hub stored them; what the
    /// app's redaction hid stays hidden). Off by default.
    #[arg(long)]
    pub otlp_content: bool,
}

impl OtlpArgs {
    /// The exporter's settings, `None` without `--otlp`.
    pub fn config(&self) -> Result<Option<OtlpConfig>, String> {
        let Some(endpoint) = &self.otlp else {
            if !self.otlp_header.is_empty() {
                return Err("--otlp-header needs --otlp".into());
            }
            return Ok(None);
        };
        let mut c = OtlpConfig::new(endpoint)?;
        for h in &self.otlp_header {
            c.header(h)?;
        }
        c.content = self.otlp_content;
        Ok(Some(c))
    }
}

/// Flags of `graphmind export`.
#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// The runs to export (ids as `graphmind runs` lists them).
    #[arg(required = true, value_name = "RUN_ID")]
    pub run_ids: Vec<String>,
    #[command(flatten)]
    pub otlp: OtlpArgs,
    /// Write the OTLP request (protobuf `ExportTraceServiceRequest`, as POSTed to
    /// /v1/traces) to this file instead of sending it.
    #[arg(long, value_name = "FILE", conflicts_with = "otlp")]
    pub out: Option<PathBuf>,
    /// Database file (default $GRAPHMIND_HOME/graphmind.db); a hub may be running on it.
    #[arg(long, conflicts_with = "port")]
    pub db: Option<PathBuf>,
    /// Export from the database of the hub on this port (the `db` of its run file), as the
    /// other commands take `--port` [default: --db, else $GRAPHMIND_HOME/graphmind.db].
    #[arg(long)]
    pub port: Option<u16>,
}

/// The database of the hub on `port`, from its run file.
fn db_of_port(port: u16) -> Result<PathBuf, String> {
    let file = paths::run_file(port);
    let text = std::fs::read_to_string(&file).map_err(|e| {
        format!(
            "no run file {} ({e}): is `graphmind serve` running on port {port} with this \
             GRAPHMIND_HOME? (or pass --db)",
            file.display()
        )
    })?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|_| format!("{} is not JSON", file.display()))?;
    doc.get("db")
        .and_then(serde_json::Value::as_str)
        .map(PathBuf::from)
        .ok_or_else(|| {
            format!(
                "{} names no database (a hub of another version?): pass --db",
                file.display()
            )
        })
}

/// `graphmind export`.
pub fn main(args: ExportArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("graphmind: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(&args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("graphmind: {e}");
            ExitCode::from(1)
        }
    }
}

async fn run(args: &ExportArgs) -> Result<ExitCode, String> {
    let db = match (args.port, &args.db) {
        (Some(port), _) => db_of_port(port)?,
        (None, Some(db)) => db.clone(),
        (None, None) => paths::default_db(),
    };
    let otlp = args.otlp.config()?;
    let (summary, to) = match (&otlp, &args.out) {
        (Some(config), None) => (
            graphmind_hub::otlp::export_stored(&db, &args.run_ids, config).await?,
            config.endpoint.clone(),
        ),
        (None, Some(out)) => {
            let opts = MapOptions {
                content: args.otlp.otlp_content,
            };
            let (bytes, summary) =
                graphmind_hub::otlp::encode_stored(&db, &args.run_ids, opts).await?;
            std::fs::write(out, &bytes).map_err(|e| format!("{}: {e}", out.display()))?;
            (summary, out.display().to_string())
        }
        _ => return Err("graphmind export needs --otlp ENDPOINT or --out FILE".into()),
    };
    for id in &summary.missing {
        eprintln!("graphmind: no run {id} in {}", db.display());
    }
    println!(
        "graphmind: exported {} run(s), {} span(s) to {to}",
        summary.runs, summary.spans
    );
    Ok(if summary.missing.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
