//! The hub's own accept loop: HTTP/1.1 with WebSocket upgrades on every accepted connection
//! (hyper; `axum::serve` sets no header-read timeout). Unlike `axum::serve` it
//! - bounds the time a client may take to send a request's headers (also when they trickle
//!   in a byte at a time: the timer is not restarted by each byte);
//! - counts every connection against a budget below the descriptor limit
//!   ([`crate::connections`]), shedding the longest-waiting ones first, so that slow clients
//!   cannot use up the descriptors that `/health` and new apps need;
//! - turns Nagle off: gate controls are small, latency-bound frames.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::connections::{Connections, Slot};

/// Accepts connections on `listener` and serves `app` on each, within `conns`' budget.
pub async fn accept_loop(
    listener: tokio::net::TcpListener,
    app: Router,
    header_timeout: Duration,
    conns: Arc<Connections>,
) {
    loop {
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // Out of descriptors after all (the hub's own files grew): free one, and wait
                // instead of spinning.
                conns.relieve();
                eprintln!("graphmind: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Every place busy or upgraded: close it at once (counted), keep accepting.
        let Some(slot) = conns.admit() else {
            drop(tcp);
            continue;
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(serve(tcp, Arc::new(slot), app.clone(), header_timeout));
    }
}

/// Serves one connection until it ends or is shed.
async fn serve(tcp: TcpStream, slot: Arc<Slot>, app: Router, header_timeout: Duration) {
    let io = TokioIo::new(Counted {
        tcp,
        _slot: Arc::clone(&slot),
    });
    let inner = TowerToHyperService::new(app);
    let service = {
        let slot = Arc::clone(&slot);
        hyper::service::service_fn(move |req: Request<Incoming>| {
            let busy = slot.request();
            let upgrade = req.headers().contains_key(header::UPGRADE);
            let refuse = upgrade && !slot.may_upgrade();
            let answer = (!refuse).then(|| inner.call(req));
            let slot = Arc::clone(&slot);
            async move {
                let Some(answer) = answer else {
                    return Ok(too_many_connections());
                };
                let resp = answer.await?;
                if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
                    slot.upgraded();
                }
                // Busy until the body is handed over in full (or dropped).
                Ok::<_, std::convert::Infallible>(resp.map(|b| {
                    Body::new(b.map_frame(move |f| {
                        let _ = &busy;
                        f
                    }))
                }))
            }
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let conn = http.serve_connection(io, service).with_upgrades();
    // Errors are the client's (a reset, a timeout, bad HTTP): nothing to report.
    tokio::select! {
        _ = conn => {}
        () = slot.shed() => {}
    }
}

/// `503`: no place left for another WebSocket.
fn too_many_connections() -> Response<Body> {
    let mut r = Response::new(Body::from(
        "503 service unavailable: too many WebSocket connections are open on this hub\n",
    ));
    *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A connection's socket with its place in the budget: the place is freed when the socket
/// closes, also after an upgrade has taken the socket away from hyper.
struct Counted {
    tcp: TcpStream,
    _slot: Arc<Slot>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
