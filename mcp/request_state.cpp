#include "mcp/request_state.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <memory>

#include "mcp/base64.h"
#include "net/ascii.h"

namespace codemode::server {
namespace {

constexpr std::size_t kKeyBytes = 32;
constexpr std::size_t kNonceBytes = 12;
constexpr std::size_t kTagBytes = 16;
constexpr std::string_view kAad = "codemode-mcp requestState v1";

using CipherContext = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

std::string random_bytes(std::size_t n) {
  std::string bytes(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(n)) != 1) {
    return {};
  }
  return bytes;
}

}  // namespace

std::optional<std::string> approval_key_bytes(std::string_view text) {
  if (text.size() != 2 * kKeyBytes) return std::nullopt;
  std::string bytes;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    int value = 0;
    for (std::size_t j = i; j < i + 2; ++j) {
      const char c = text[j];
      const int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
      if (digit < 0) return std::nullopt;
      value = value * 16 + digit;
    }
    bytes += static_cast<char>(value);
  }
  return bytes;
}

RequestStates::RequestStates(std::string key, std::chrono::seconds ttl, std::size_t per_principal,
                             Clock clock, std::string api)
    : key_(key.size() == kKeyBytes ? std::move(key) : random_bytes(kKeyBytes)),
      api_(std::move(api)),
      ttl_(ttl),
      per_principal_cap_(per_principal),
      clock_(std::move(clock)) {}

std::int64_t RequestStates::now_s() const {
  return std::chrono::duration_cast<std::chrono::seconds>(clock_().time_since_epoch()).count();
}

std::string RequestStates::seal(Json state, std::string_view principal) const {
  state["id"] = net::to_hex(random_bytes(16));
  state["principal"] = principal;
  if (!api_.empty()) state["api"] = api_;
  state["exp"] = now_s() + ttl_.count();
  const std::string plain = dump(state);
  const std::string nonce = random_bytes(kNonceBytes);
  std::string sealed = nonce;
  sealed.resize(kNonceBytes + plain.size() + kTagBytes);
  auto* out = reinterpret_cast<unsigned char*>(sealed.data()) + kNonceBytes;
  CipherContext context(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0;
  int total = 0;
  const auto* k = reinterpret_cast<const unsigned char*>(key_.data());
  const auto* iv = reinterpret_cast<const unsigned char*>(nonce.data());
  bool ok = context && nonce.size() == kNonceBytes &&
            EVP_EncryptInit_ex(context.get(), EVP_aes_256_gcm(), nullptr, k, iv) == 1 &&
            EVP_EncryptUpdate(context.get(), nullptr, &n,
                              reinterpret_cast<const unsigned char*>(kAad.data()),
                              static_cast<int>(kAad.size())) == 1 &&
            EVP_EncryptUpdate(context.get(), out, &n,
                              reinterpret_cast<const unsigned char*>(plain.data()),
                              static_cast<int>(plain.size())) == 1;
  total = n;
  ok = ok && EVP_EncryptFinal_ex(context.get(), out + total, &n) == 1 &&
       EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes),
                           out + total + n) == 1;
  if (!ok) return {};  // opens as "not one of ours"
  return base64_encode(sealed);
}

std::variant<Json, std::string> RequestStates::open(std::string_view text,
                                                    std::string_view principal) {
  const std::string refused = "requestState is not one this server issued, or it was changed";
  const auto sealed = base64_decode(text);
  if (!sealed || sealed->size() < kNonceBytes + kTagBytes) return refused;
  const std::size_t size = sealed->size() - kNonceBytes - kTagBytes;
  const auto* in = reinterpret_cast<const unsigned char*>(sealed->data());
  std::string plain(size, '\0');
  CipherContext context(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0;
  std::array<unsigned char, kTagBytes> tag{};
  std::copy(in + kNonceBytes + size, in + kNonceBytes + size + kTagBytes, tag.begin());
  const bool ok =
      context &&
      EVP_DecryptInit_ex(context.get(), EVP_aes_256_gcm(), nullptr,
                         reinterpret_cast<const unsigned char*>(key_.data()), in) == 1 &&
      EVP_DecryptUpdate(context.get(), nullptr, &n,
                        reinterpret_cast<const unsigned char*>(kAad.data()),
                        static_cast<int>(kAad.size())) == 1 &&
      EVP_DecryptUpdate(context.get(), reinterpret_cast<unsigned char*>(plain.data()), &n,
                        in + kNonceBytes, static_cast<int>(size)) == 1 &&
      EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes),
                          tag.data()) == 1 &&
      EVP_DecryptFinal_ex(context.get(), reinterpret_cast<unsigned char*>(plain.data()) + n, &n) ==
          1;
  if (!ok) return refused;
  Json state = Json::parse(plain, nullptr, false);
  if (!state.is_object() || !state.contains("id") || !state["id"].is_string() ||
      !state.contains("principal") || !state["principal"].is_string() || !state.contains("exp") ||
      !state["exp"].is_number_integer()) {
    return refused;
  }
  if (state["principal"].get<std::string>() != principal) {
    return std::string("requestState was issued to another principal");
  }
  const auto api = state.find("api");
  if ((api == state.end() && !api_.empty()) ||
      (api != state.end() && (!api->is_string() || api->get<std::string>() != api_))) {
    return std::string("requestState was issued for another API");
  }
  const std::int64_t exp = state["exp"].get<std::int64_t>();
  const std::int64_t now = now_s();
  if (now > exp) return std::string("requestState has expired; send the call again");
  std::lock_guard lock(mutex_);
  while (!expiries_.empty() && expiries_.begin()->first < now) {
    const auto used = used_.find(expiries_.begin()->second);
    if (used != used_.end()) {
      const auto count = per_principal_.find(used->second.principal);
      if (count != per_principal_.end() && --count->second == 0) per_principal_.erase(count);
      used_.erase(used);
    }
    expiries_.erase(expiries_.begin());
  }
  const std::string id = state["id"].get<std::string>();
  if (used_.contains(id)) return std::string("requestState was already used");
  const auto held = per_principal_.find(principal);
  if (used_.size() >= kMaxUsedStates ||
      (held != per_principal_.end() && held->second >= per_principal_cap_)) {
    return std::string("too many approvals in flight; retry later");
  }
  used_.emplace(id, Used{exp, std::string(principal)});
  expiries_.emplace(exp, id);
  ++per_principal_[std::string(principal)];
  return state;
}

}  // namespace codemode::server
