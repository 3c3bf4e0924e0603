#include "isolate/host_functions.h"

#include <openssl/evp.h>
#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "base/check.h"
#include "isolate/globals_snapshot.h"
#include "isolate/v8_text.h"

namespace codemode::isolate::detail {

namespace {

// The Web Crypto API's quota for one getRandomValues.
constexpr std::size_t kMaxRandomBytes = 65536;

// Pending setTimeout callbacks of one call. Each holds host memory (two global handles and a map
// node) that the heap cap does not see.
constexpr std::size_t kMaxTimers = 10000;

CallState& state_of(v8::Isolate* isolate) { return *static_cast<CallState*>(isolate->GetData(0)); }

}  // namespace

// ------------------------------------------------------------------------------------------
// Host functions. Each is reached only through the bootstrap closure, which checks argument
// types first; the checks here are for invariants, not for the code's benefit.

void host_log(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 2 || !info[0]->IsInt32() || !info[1]->IsString()) return;
  // A little more than a log can hold, so LogSink still sees that it cuts the line.
  Utf8Prefix text = utf8_prefix(isolate, info[1].As<v8::String>(), kMaxLogChars + 4);
  state_of(isolate).logs.add(info[0].As<v8::Int32>()->Value(), text.text, text.dropped);
}

void host_set_timeout(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 3 || !info[0]->IsFunction() || !info[1]->IsNumber() || !info[2]->IsArray()) {
    return throw_type_error(isolate, "setTimeout: bad arguments");
  }
  CallState& state = state_of(isolate);
  if (state.timers.size() >= kMaxTimers) {
    isolate->ThrowException(v8::Exception::RangeError(v8_string(
        isolate, "setTimeout: too many pending timers (" + std::to_string(kMaxTimers) + ")")));
    return;
  }
  const double delay = std::clamp(info[1].As<v8::Number>()->Value(), 0.0, 1e9);
  const auto due =
      Clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(delay * 1000));
  const std::uint32_t id = state.next_timer_id++;
  // A timer due after the wall deadline can never fire; it still counts as pending work, so the
  // call ends as a wall timeout rather than "never settled" — that is what the code asked for.
  state.timers.emplace(std::make_pair(due, state.timer_sequence++),
                       Timer{id, v8::Global<v8::Function>(isolate, info[0].As<v8::Function>()),
                             v8::Global<v8::Array>(isolate, info[2].As<v8::Array>())});
  info.GetReturnValue().Set(id);
}

void host_clear_timeout(const v8::FunctionCallbackInfo<v8::Value>& info) {
  if (info.Length() < 1 || !info[0]->IsNumber()) return;
  const double id = info[0].As<v8::Number>()->Value();
  auto& timers = state_of(info.GetIsolate()).timers;
  for (auto it = timers.begin(); it != timers.end(); ++it) {
    if (it->second.id == id) {
      timers.erase(it);
      return;
    }
  }
}

void host_queue_microtask(const v8::FunctionCallbackInfo<v8::Value>& info) {
  if (info.Length() < 1 || !info[0]->IsFunction()) return;
  info.GetIsolate()->EnqueueMicrotask(info[0].As<v8::Function>());
}

namespace {

// The serialised form of a structuredClone lives in host memory and is written without interrupt
// checks (one string repeated in an array is copied once per element), so it gets a budget.
// Over the budget V8 throws `Data cannot be cloned, out of memory.`
class CloneDelegate final : public v8::ValueSerializer::Delegate {
 public:
  CloneDelegate(v8::Isolate* isolate, std::size_t budget) : isolate_(isolate), budget_(budget) {}
  void ThrowDataCloneError(v8::Local<v8::String> message) override {
    isolate_->ThrowException(v8::Exception::Error(message));
  }
  void* ReallocateBufferMemory(void* old_buffer, std::size_t size,
                               std::size_t* actual_size) override {
    if (size > budget_) return nullptr;
    void* p = std::realloc(old_buffer, size);
    if (p) *actual_size = size;
    return p;
  }
  void FreeBufferMemory(void* buffer) override { std::free(buffer); }

 private:
  v8::Isolate* isolate_;
  std::size_t budget_;
};

}  // namespace

void host_structured_clone(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  // The transfer list (bootstrap.js passes an array): ArrayBuffers, each once, none detached.
  // Their backing stores move to the copies and the originals are detached, as the HTML
  // standard's StructuredSerializeWithTransfer does; no byte is copied or allocated.
  std::vector<v8::Local<v8::ArrayBuffer>> transfer;
  if (info.Length() > 1 && info[1]->IsArray()) {
    v8::Local<v8::Array> list = info[1].As<v8::Array>();
    for (std::uint32_t i = 0; i < list->Length(); ++i) {
      v8::Local<v8::Value> item;
      if (!list->Get(context, i).ToLocal(&item)) return;
      if (!item->IsArrayBuffer()) {
        isolate->ThrowException(v8::Exception::Error(
            v8_string(isolate, "only an ArrayBuffer can be transferred here")));
        return;
      }
      v8::Local<v8::ArrayBuffer> buffer = item.As<v8::ArrayBuffer>();
      const bool repeated = std::any_of(transfer.begin(), transfer.end(),
                                        [&](const auto& seen) { return seen == buffer; });
      if (repeated || buffer->WasDetached() || !buffer->IsDetachable()) {
        isolate->ThrowException(v8::Exception::Error(v8_string(
            isolate, "an ArrayBuffer to transfer is listed twice, detached or not detachable")));
        return;
      }
      transfer.push_back(buffer);
    }
  }
  CloneDelegate delegate(isolate, state_of(isolate).clone_budget);
  v8::ValueSerializer serializer(isolate, &delegate);
  for (std::uint32_t i = 0; i < transfer.size(); ++i)
    serializer.TransferArrayBuffer(i, transfer[i]);
  serializer.WriteHeader();
  if (!serializer.WriteValue(context, info[0]).FromMaybe(false)) return;  // DataCloneError thrown
  const std::pair<std::uint8_t*, std::size_t> buffer = serializer.Release();
  std::unique_ptr<std::uint8_t, decltype(&std::free)> owned(buffer.first, &std::free);
  v8::ValueDeserializer deserializer(isolate, buffer.first, buffer.second);
  for (std::uint32_t i = 0; i < transfer.size(); ++i) {
    std::shared_ptr<v8::BackingStore> store = transfer[i]->GetBackingStore();
    transfer[i]->Detach();
    deserializer.TransferArrayBuffer(i, v8::ArrayBuffer::New(isolate, std::move(store)));
  }
  if (!deserializer.ReadHeader(context).FromMaybe(false)) return;
  v8::Local<v8::Value> copy;
  if (deserializer.ReadValue(context).ToLocal(&copy)) info.GetReturnValue().Set(copy);
}

// TextEncoder in two steps so that the bytes are allocated by JS (`new Uint8Array(n)`): refused
// by the ArrayBuffer budget there it is a RangeError, while v8::ArrayBuffer::New in the host
// aborts the whole process.
void host_utf8_length(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 1 || !info[0]->IsString())
    return throw_type_error(isolate, "expected a string");
  info.GetReturnValue().Set(static_cast<double>(info[0].As<v8::String>()->Utf8LengthV2(isolate)));
}

void host_utf8_write(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 2 || !info[0]->IsString() || !info[1]->IsUint8Array())
    return throw_type_error(isolate, "expected a string and bytes");
  v8::Local<v8::Uint8Array> view = info[1].As<v8::Uint8Array>();
  const std::size_t capacity = view->ByteLength();
  if (capacity == 0) return;
  char* data = static_cast<char*>(view->Buffer()->GetBackingStore()->Data()) + view->ByteOffset();
  info[0].As<v8::String>()->WriteUtf8V2(isolate, data, capacity,
                                        v8::String::WriteFlags::kReplaceInvalidUtf8);
}

namespace {

bool valid_utf8(const unsigned char* p, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else
      return false;
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace

void host_utf8_decode(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 1 || !info[0]->IsUint8Array())
    return throw_type_error(isolate, "expected bytes");
  v8::Local<v8::Uint8Array> view = info[0].As<v8::Uint8Array>();
  std::string bytes(view->ByteLength(), '\0');
  view->CopyContents(bytes.data(), bytes.size());
  if (info.Length() > 1 && info[1]->IsTrue() &&
      !valid_utf8(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size())) {
    return throw_type_error(isolate, "TextDecoder.decode: the input is not valid UTF-8");
  }
  // NewFromUtf8 replaces malformed sequences with U+FFFD, as the WHATWG decoder does.
  v8::Local<v8::String> text;
  if (v8::String::NewFromUtf8(isolate, bytes.data(), v8::NewStringType::kNormal,
                              static_cast<int>(bytes.size()))
          .ToLocal(&text)) {
    info.GetReturnValue().Set(text);
  } else if (!isolate->IsExecutionTerminating()) {
    isolate->ThrowException(
        v8::Exception::RangeError(v8_string(isolate, "TextDecoder.decode: Invalid string length")));
  }
}

// ------------------------------------------------------------------------------------------
// fetch(): the request leaves as plain data; the completion comes back through the Mailbox.

namespace {

// Bounds on what the host copies out of the isolate for one request, before the gateway's own
// checks: enough for any API call, small enough that hostile code cannot make the host copy
// hundreds of megabytes.
constexpr std::size_t kMaxUrlBytes = std::size_t{16} * 1024;
constexpr std::size_t kMaxHeaderBytes = std::size_t{16} * 1024;
constexpr std::uint32_t kMaxHeaders = 100;
constexpr std::size_t kMaxRequestBodyBytes = 8 * kMB;

// Copies a JS string argument of at most `max_bytes` UTF-8 bytes; false (with a TypeError
// thrown) when it is not a string or too long.
bool string_arg(v8::Isolate* isolate, v8::Local<v8::Value> value, std::size_t max_bytes,
                std::string_view what, std::string& out) {
  if (!value->IsString()) {
    throw_type_error(isolate, "fetch: " + std::string(what) + " must be a string");
    return false;
  }
  Utf8Prefix text = utf8_prefix(isolate, value.As<v8::String>(), max_bytes + 1);
  if (text.dropped > 0 || text.text.size() > max_bytes) {
    throw_type_error(isolate, "fetch: " + std::string(what) + " is longer than " +
                                  std::to_string(max_bytes) + " bytes");
    return false;
  }
  out = std::move(text.text);
  return true;
}

}  // namespace

// hostFetch(method, url, [[name, value], ...], body: undefined | Uint8Array) -> Promise
void host_fetch(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  CallState& state = state_of(isolate);
  if (state.fetcher == nullptr) return throw_type_error(isolate, "fetch: not available here");
  gateway::OutboundRequest request;
  if (info.Length() < 4 || !info[2]->IsArray()) {
    return throw_type_error(isolate, "fetch: bad arguments");
  }
  if (!string_arg(isolate, info[0], 16, "the method", request.method) ||
      !string_arg(isolate, info[1], kMaxUrlBytes, "the URL", request.url)) {
    return;
  }
  v8::Local<v8::Array> headers = info[2].As<v8::Array>();
  if (headers->Length() > kMaxHeaders) {
    return throw_type_error(isolate,
                            "fetch: more than " + std::to_string(kMaxHeaders) + " headers");
  }
  for (std::uint32_t i = 0; i < headers->Length(); ++i) {
    v8::Local<v8::Value> pair, name, value;
    if (!headers->Get(context, i).ToLocal(&pair)) return;
    if (!pair->IsArray()) return throw_type_error(isolate, "fetch: bad header pair");
    if (!pair.As<v8::Array>()->Get(context, 0).ToLocal(&name) ||
        !pair.As<v8::Array>()->Get(context, 1).ToLocal(&value)) {
      return;
    }
    gateway::Header header;
    if (!string_arg(isolate, name, kMaxHeaderBytes, "a header name", header.first) ||
        !string_arg(isolate, value, kMaxHeaderBytes, "a header value", header.second)) {
      return;
    }
    request.headers.push_back(std::move(header));
  }
  if (info[3]->IsUint8Array()) {
    v8::Local<v8::Uint8Array> body = info[3].As<v8::Uint8Array>();
    if (body->ByteLength() > kMaxRequestBodyBytes) {
      return throw_type_error(isolate, "fetch: the request body is larger than " +
                                           std::to_string(kMaxRequestBodyBytes) + " bytes");
    }
    request.body.resize(body->ByteLength());
    body->CopyContents(request.body.data(), request.body.size());
  } else if (!info[3]->IsUndefined()) {
    return throw_type_error(isolate, "fetch: bad body");
  }

  v8::Local<v8::Promise::Resolver> resolver;
  if (!v8::Promise::Resolver::New(context).ToLocal(&resolver)) return;
  const std::uint32_t id = state.next_fetch_id++;
  state.fetches.emplace(id, v8::Global<v8::Promise::Resolver>(isolate, resolver));
  channel::FetchDone done(
      [mailbox = state.mailbox, id](gateway::FetchResult result) {
        mailbox->deliver(id, std::move(result));
      },
      [mailbox = state.mailbox](bool waiting) { mailbox->hold(waiting); });
  done.set_abort(
      state.fetch_aborts.emplace(id, std::make_shared<gateway::FetchAbort>()).first->second);
  (*state.fetcher)(std::move(request), std::move(done));
  info.GetReturnValue().Set(resolver->GetPromise());
}

// hostReadBody(bodyId, uint8array): moves an arrived body into memory the code allocated.
void host_read_body(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  CallState& state = state_of(isolate);
  if (info.Length() < 2 || !info[0]->IsUint32() || !info[1]->IsUint8Array()) {
    return throw_type_error(isolate, "readBody: bad arguments");
  }
  auto body = state.bodies.find(info[0].As<v8::Uint32>()->Value());
  v8::Local<v8::Uint8Array> target = info[1].As<v8::Uint8Array>();
  if (body == state.bodies.end() || target->ByteLength() != body->second.size()) {
    return throw_type_error(isolate, "readBody: no such body");
  }
  if (!body->second.empty()) {
    std::shared_ptr<v8::BackingStore> store = target->Buffer()->GetBackingStore();
    std::memcpy(static_cast<char*>(store->Data()) + target->ByteOffset(), body->second.data(),
                body->second.size());
  }
  state.bodies.erase(body);
}

// randomFill(uint8array): fills it from the kernel's CSPRNG. bootstrap.js's getRandomValues
// checks the type and the 65536-byte quota first; this checks them again, for any caller.
void host_random_fill(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 1 || !info[0]->IsUint8Array()) {
    return throw_type_error(isolate, "randomFill: bad arguments");
  }
  v8::Local<v8::Uint8Array> target = info[0].As<v8::Uint8Array>();
  if (target->ByteLength() > kMaxRandomBytes) {
    return throw_type_error(isolate, "randomFill: more than 65536 bytes");
  }
  // Straight into the array's memory: no code runs until this returns, so the view cannot be
  // detached or shrunk in between (a detached one has length 0), and a 64 KiB buffer on a call
  // thread's stack is avoided.
  const std::size_t length = target->ByteLength();
  if (length == 0) return;
  std::shared_ptr<v8::BackingStore> store = target->Buffer()->GetBackingStore();
  auto* bytes = static_cast<unsigned char*>(store->Data()) + target->ByteOffset();
  std::size_t filled = 0;
  while (filled < length) {
    const ssize_t got = ::getrandom(bytes + filled, length - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    CODEMODE_CHECK(got > 0, "getrandom(2) is allowed by the lockdown and cannot fail here");
    filled += static_cast<std::size_t>(got);
  }
}

// digest(algorithm, input, output): output (a Uint8Array of exactly the digest's length) gets
// the digest of input's bytes, by OpenSSL's EVP (node's own). 0..3: SHA-1, SHA-256, SHA-384,
// SHA-512.
void host_digest(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 3 || !info[0]->IsUint32() || !info[1]->IsUint8Array() ||
      !info[2]->IsUint8Array()) {
    return throw_type_error(isolate, "digest: bad arguments");
  }
  const EVP_MD* const algorithms[] = {EVP_sha1(), EVP_sha256(), EVP_sha384(), EVP_sha512()};
  const std::uint32_t which = info[0].As<v8::Uint32>()->Value();
  if (which >= std::size(algorithms)) return throw_type_error(isolate, "digest: bad algorithm");
  const EVP_MD* md = algorithms[which];
  v8::Local<v8::Uint8Array> input = info[1].As<v8::Uint8Array>();
  v8::Local<v8::Uint8Array> output = info[2].As<v8::Uint8Array>();
  if (output->ByteLength() != static_cast<std::size_t>(EVP_MD_get_size(md))) {
    return throw_type_error(isolate, "digest: bad output length");
  }
  // The input's bytes are read where they are: no code runs during EVP_Digest, and a detached
  // buffer has length 0.
  std::shared_ptr<v8::BackingStore> in = input->Buffer()->GetBackingStore();
  const auto* data = static_cast<const unsigned char*>(in->Data());
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  CODEMODE_CHECK(EVP_Digest(input->ByteLength() == 0 ? digest.data() : data + input->ByteOffset(),
                            input->ByteLength(), digest.data(), &size, md, nullptr) == 1,
                 "a digest over memory cannot fail");
  std::shared_ptr<v8::BackingStore> out = output->Buffer()->GetBackingStore();
  std::memcpy(static_cast<char*>(out->Data()) + output->ByteOffset(), digest.data(), size);
}

void warm_crypto() {
  // OpenSSL 3 finds each algorithm's implementation on its first use, and may read its
  // configuration then: here, before the lockdown refuses files.
  for (const EVP_MD* md : {EVP_sha1(), EVP_sha256(), EVP_sha384(), EVP_sha512()}) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int size = 0;
    CODEMODE_CHECK(EVP_Digest("", 0, digest.data(), &size, md, nullptr) == 1,
                   "OpenSSL's digests are available");
  }
}

// abortFetch(promise): forgets the pending fetch whose promise hostFetch returned, and stops its
// request (FetchDone::abort: the daemon closes its upstream connection). Its answer is
// dropped when it arrives, and the call no longer waits for it; the promise stays pending (the
// code holds fetch()'s own promise, which the signal rejects). Anything else: nothing happens.
void host_abort_fetch(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 1 || !info[0]->IsPromise()) return;
  CallState& state = state_of(isolate);
  for (auto it = state.fetches.begin(); it != state.fetches.end(); ++it) {
    if (it->second.Get(isolate)->GetPromise() == info[0]) {
      // The request is stopped where it is, in the daemon (gateway::FetchAbort).
      if (auto abort = state.fetch_aborts.find(it->first); abort != state.fetch_aborts.end()) {
        abort->second->abort(gateway::AbortCause::signal);
      }
      state.fetches.erase(it);
      return;
    }
  }
}

void host_load_vendor(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 1 || !info[0]->IsUint32() ||
      info[0].As<v8::Uint32>()->Value() > static_cast<std::uint32_t>(Vendor::web)) {
    return throw_type_error(isolate, "loadVendor: bad arguments");
  }
  const auto which = static_cast<Vendor>(info[0].As<v8::Uint32>()->Value());
  v8::Local<v8::Value> factory;
  // On failure an exception is pending (a termination, or the heap cap): it propagates.
  if (!run_vendor_script(isolate->GetCurrentContext(), which).ToLocal(&factory)) return;
  info.GetReturnValue().Set(factory);
}

const intptr_t* external_references() {
  static const intptr_t kReferences[] = {
      reinterpret_cast<intptr_t>(host_log),
      reinterpret_cast<intptr_t>(host_set_timeout),
      reinterpret_cast<intptr_t>(host_clear_timeout),
      reinterpret_cast<intptr_t>(host_queue_microtask),
      reinterpret_cast<intptr_t>(host_structured_clone),
      reinterpret_cast<intptr_t>(host_utf8_length),
      reinterpret_cast<intptr_t>(host_utf8_write),
      reinterpret_cast<intptr_t>(host_utf8_decode),
      reinterpret_cast<intptr_t>(host_fetch),
      reinterpret_cast<intptr_t>(host_read_body),
      reinterpret_cast<intptr_t>(host_load_vendor),
      reinterpret_cast<intptr_t>(host_random_fill),
      reinterpret_cast<intptr_t>(host_digest),
      reinterpret_cast<intptr_t>(host_abort_fetch),
      0,
  };
  return kReferences;
}

}  // namespace codemode::isolate::detail
