//! The monitor's HTTP endpoint (`tiny_http`): `/metrics` (the Prometheus exposition),
//! `/healthz` (200 while the process runs) and `/readyz` (200 once every channel has scored a
//! frame, else 503), on the address of `[server] listen` / `--listen`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

/// What the endpoint serves: the exposition text and the readiness, asked for at each request.
pub trait Source: Send + Sync {
    /// The `/metrics` body (OpenMetrics text).
    fn metrics(&self) -> String;
    /// `None` when ready, else why not (the `/readyz` 503 body).
    fn not_ready(&self) -> Option<String>;
}

/// The running endpoint; [`Endpoint::stop`] (or dropping it) ends its thread.
pub struct Endpoint {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

/// The OpenMetrics content type Prometheus negotiates.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

impl Endpoint {
    /// Binds `addr` and serves on a thread of its own. Errors: the address cannot be bound
    /// (in use, not local, no permission), as text for the user.
    pub fn start(addr: SocketAddr, source: Arc<dyn Source>) -> Result<Self, String> {
        let server = tiny_http::Server::http(addr)
            .map(Arc::new)
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let serving = Arc::clone(&server);
        let thread = std::thread::Builder::new()
            .name("monitor-http".into())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    let (status, body, kind) = answer(request.url(), source.as_ref());
                    let mut response =
                        tiny_http::Response::from_string(body).with_status_code(status);
                    if let Ok(header) = tiny_http::Header::from_bytes("Content-Type", kind) {
                        response.add_header(header);
                    }
                    // A client that went away is not our problem.
                    let _ = request.respond(response);
                }
            })
            .map_err(|e| format!("cannot start the HTTP thread: {e}"))?;
        Ok(Self {
            server,
            thread: Some(thread),
        })
    }

    /// Stops serving and joins the thread.
    pub fn stop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Status, body and content type for a request path (the query string is ignored).
fn answer(url: &str, source: &dyn Source) -> (u16, String, &'static str) {
    let path = url.split('?').next().unwrap_or(url);
    match path {
        "/metrics" => (200, source.metrics(), OPENMETRICS),
        "/healthz" => (200, "ok\n".into(), "text/plain; charset=utf-8"),
        "/readyz" => match source.not_ready() {
            None => (200, "ready\n".into(), "text/plain; charset=utf-8"),
            Some(why) => (503, format!("{why}\n"), "text/plain; charset=utf-8"),
        },
        _ => (
            404,
            "not found: /metrics, /healthz and /readyz are served\n".into(),
            "text/plain; charset=utf-8",
        ),
    }
}
