#include "auth/oauth_client.h"

#include <algorithm>
#include <array>

#include <openssl/evp.h>

#include "config/config.h"
#include "gateway/url_policy.h"
#include "net/base64.h"
#include "net/percent.h"

namespace codemode::auth {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kHex = "0123456789ABCDEF";

// application/x-www-form-urlencoded as RFC 6749 §2.3.1 and appendix B use it: every byte but
// the unreserved ones as %XX (space too, not '+').
std::string percent_encode(std::string_view text) {
  return net::percent_encode(text, net::kUnreserved);
}

}  // namespace

std::vector<std::string> metadata_urls(const std::string& issuer) {
  const std::size_t authority_end = issuer.find('/', issuer.find("://") + 3);
  const std::string origin = issuer.substr(0, authority_end);
  std::string path = authority_end == std::string::npos ? "" : issuer.substr(authority_end);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return {origin + "/.well-known/oauth-authorization-server" + path,
          origin + path + "/.well-known/openid-configuration"};
}

std::variant<Json, std::string> read_issuer_metadata(std::string_view body, const std::string& url,
                                                     const std::string& issuer) {
  Json metadata = Json::parse(body, nullptr, false);
  if (!metadata.is_object()) return url + " is not a JSON object";
  const auto named = metadata.find("issuer");
  if (named == metadata.end() || !named->is_string() ||
      named->get_ref<const std::string&>() != issuer) {
    return url + " names another issuer";
  }
  return metadata;
}

std::optional<std::string> metadata_endpoint(const Json& metadata, std::string_view name) {
  const auto it = metadata.find(std::string(name));
  if (it == metadata.end() || !it->is_string()) return std::nullopt;
  auto url = gateway::normalise_url(it->get<std::string>(), "");
  if (std::holds_alternative<std::string>(url)) return std::nullopt;
  std::string full = std::get<gateway::NormalisedUrl>(url).full();
  if (!config::is_acceptable_oauth_url(full)) return std::nullopt;
  return full;
}

std::string form_encode(const std::vector<std::pair<std::string_view, std::string_view>>& fields) {
  std::string out;
  for (const auto& field : fields) {
    if (!out.empty()) out += '&';
    out += percent_encode(field.first);
    out += '=';
    out += percent_encode(field.second);
  }
  return out;
}

std::string basic_authorization(std::string_view client_id, std::string_view client_secret) {
  const std::string credentials = percent_encode(client_id) + ":" + percent_encode(client_secret);
  return "Basic " + net::base64_encode(credentials);
}

std::string token_digest(std::string_view token) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(token.data(), token.size(), digest.data(), &length, EVP_sha256(), nullptr);
  std::string hex;
  hex.reserve(std::size_t{length} * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

bool is_b64token(std::string_view token, std::size_t max) {
  if (token.empty() || token.size() > max) return false;
  std::size_t end = token.size();
  while (end > 0 && token[end - 1] == '=') --end;
  if (end == 0) return false;
  return std::all_of(token.begin(), token.begin() + static_cast<std::ptrdiff_t>(end),
                     [](char c) { return net::kUnreserved.contains(c) || c == '+' || c == '/'; });
}

std::variant<std::unique_ptr<gateway::HttpClient>, std::vector<std::string>>
authorization_server_client(boost::asio::io_context& io,
                            const std::optional<std::filesystem::path>& ca_file, std::size_t idle) {
  gateway::ClientOptions options;
  options.ca_file = ca_file;
  options.max_idle_per_origin = idle;
  return gateway::HttpClient::create(io, options);
}

void post_form(gateway::HttpClient& client, const std::string& url, std::string authorization,
               std::string form, gateway::Deadline deadline, std::function<void(FormResult)> done) {
  auto normalised = gateway::normalise_url(url, "");
  if (auto* problem = std::get_if<std::string>(&normalised)) {
    return done(url + ": " + *problem);
  }
  gateway::ClientRequest request;
  request.method = gateway::Method::post;
  request.url = std::get<gateway::NormalisedUrl>(normalised);
  request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  request.headers.emplace_back("Accept", "application/json");
  request.headers.emplace_back("Authorization", std::move(authorization));
  request.body = std::move(form);
  client.send(std::move(request), deadline,
              [url, done = std::move(done)](gateway::ClientResult result) {
                if (auto* error = std::get_if<gateway::GatewayError>(&result)) {
                  return done(url + ": " + error->message);
                }
                auto& response = std::get<gateway::InboundResponse>(result);
                done(FormAnswer{response.status, std::move(response.body)});
              });
}

}  // namespace codemode::auth
