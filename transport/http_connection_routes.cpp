// HttpConnection outside /mcp (http_connection.h): /healthz, /readyz, /metrics and the OAuth
// protected resource metadata (RFC 9728) of each API. None reads a body; only /metrics
// takes a token.
#include "transport/http_connection.h"

#include "observe/metrics.h"

namespace codemode::server {

namespace http = boost::beast::http;

void HttpConnection::route_outside_mcp(std::string_view path, http::verb method) {
  exchange_.keep_alive = exchange_.keep_alive && !exchange_.linger;
  const bool get = method == http::verb::get;
  if (path == "/healthz" && get) return respond_text(http::status::ok, "ok\n");
  if (path == "/metrics" && get && state_->options.metrics) {
    HttpResponse response(http::status::ok, 11);
    response.set(http::field::content_type, Metrics::kContentType);
    response.body() = state_->options.metrics();
    return write(std::move(response));
  }
  if (const HttpApi* api = get ? metadata_of(path) : nullptr) {
    HttpResponse response(http::status::ok, 11);
    response.set(http::field::content_type, "application/json");
    response.body() = auth::resource_metadata_document(*api->oauth);
    return write(std::move(response));
  }
  if (path == "/mcp") {  // several APIs, none at /mcp: say where they are
    std::string paths;
    for (const auto& api : state_->options.apis) paths += (paths.empty() ? "" : ", ") + api.path;
    return respond_text(
        http::status::not_found,
        "not found: this server serves several APIs, each at its own path: " + paths + "\n");
  }
  if (path == "/readyz" && get) {
    if (state_->draining) return respond_text(http::status::service_unavailable, "draining\n");
    return respond_text(http::status::ok, "ready\n");
  }
  return respond_text(http::status::not_found, "not found\n");
}

// RFC 9728: the API whose metadata `path` asks for, or null. Each API's is at the well-known
// path suffixed with its own path (the form clients try first, e.g.
// /.well-known/oauth-protected-resource/mcp) and with its resource's path; the one API's also
// at the bare well-known path.
const HttpApi* HttpConnection::metadata_of(std::string_view path) const {
  static constexpr std::string_view kWellKnown = "/.well-known/oauth-protected-resource";
  const auto& apis = state_->options.apis;
  for (const HttpApi& api : apis) {
    if (!api.oauth) continue;
    if (path == std::string(kWellKnown) + api.path) return &api;
    if (path == kWellKnown && apis.size() == 1) return &api;
    const std::string url = auth::resource_metadata_url(api.oauth->resource);
    const std::size_t start = url.find('/', url.find("://") + 3);
    if (start != std::string::npos && path == std::string_view(url).substr(start)) return &api;
  }
  return nullptr;
}
}  // namespace codemode::server
