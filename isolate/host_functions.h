// The host functions behind the sandbox's JS globals (console, timers, queueMicrotask,
// structuredClone, TextEncoder/TextDecoder, crypto, fetch) and the per-call state they reach. Each
// is handed to js/bootstrap.js or js/fetch.js by install_globals (globals_snapshot.cpp) and stays
// in their closures; the code never sees one directly. All run on the call's thread, inside the
// isolate. Internal to sandbox/.
#pragma once

#include <v8.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "channel/call_control.h"
#include "isolate/interrupts.h"

namespace codemode::isolate::detail {

inline constexpr std::size_t kMB = std::size_t{1024} * 1024;
inline constexpr std::size_t kMaxLogLines = 100;
inline constexpr std::size_t kMaxLogChars = 8000;

// console.* output of one call, bounded by lines and characters.
class LogSink {
 public:
  // `unconverted`: characters of the line that were dropped before they reached the host.
  void add(int level, std::string_view text, std::size_t unconverted = 0) {
    static constexpr std::string_view kPrefix[] = {"", "[info] ", "[warn] ", "[error] ",
                                                   "[debug] "};
    if (lines_.size() >= kMaxLogLines || chars_ >= kMaxLogChars) {
      ++dropped_;
      return;
    }
    std::string line(kPrefix[level < 0 || level > 4 ? 0 : level]);
    line += text;
    if (chars_ + line.size() > kMaxLogChars || unconverted > 0) {
      const std::size_t keep = std::min(kMaxLogChars - chars_, line.size());
      const std::size_t cut = line.size() - keep + unconverted;
      line.resize(keep);
      while (!line.empty() && (static_cast<unsigned char>(line.back()) & 0xC0) == 0x80) {
        line.pop_back();  // do not split a UTF-8 sequence
      }
      if (!line.empty() && static_cast<unsigned char>(line.back()) >= 0xC0) line.pop_back();
      line += "…[" + std::to_string(cut) + " chars dropped]";
    }
    chars_ += line.size();
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> take() {
    if (dropped_ > 0) lines_.push_back("…[" + std::to_string(dropped_) + " more lines dropped]");
    return std::move(lines_);
  }

 private:
  std::vector<std::string> lines_;
  std::size_t chars_ = 0;
  std::size_t dropped_ = 0;
};

struct Timer {
  std::uint32_t id;
  v8::Global<v8::Function> callback;
  v8::Global<v8::Array> args;
};

// Everything the host functions of one call reach through the isolate's data slot.
struct CallState {
  LogSink logs;
  std::multimap<std::pair<Clock::time_point, std::uint64_t>, Timer> timers;
  std::uint64_t timer_sequence = 0;
  std::uint32_t next_timer_id = 1;
  Clock::time_point wall_deadline;
  std::size_t clone_budget = 0;  // bytes a structuredClone may serialise to (heap_mb)
  // execute only: fetch() through the gateway.
  const channel::Fetcher* fetcher = nullptr;
  std::shared_ptr<Mailbox> mailbox;
  std::uint32_t next_fetch_id = 1;
  std::map<std::uint32_t, v8::Global<v8::Promise::Resolver>> fetches;  // pending
  // How abortFetch gives up on a pending fetch (channel::FetchDone::abort), by the same ids.
  std::map<std::uint32_t, std::shared_ptr<gateway::FetchAbort>> fetch_aborts;
  std::map<std::uint32_t, std::string> bodies;  // arrived, not yet read by hostReadBody
  // The gateway's refusals as rejected: the error object, to recognise it if the code lets it
  // escape, and the gateway's own message, which is what the outcome reports. The object's
  // `message` is the code's to rewrite; the kind and the text of a policy outcome are not.
  struct Refusal {
    v8::Global<v8::Value> error;
    std::string message;
  };
  std::vector<Refusal> policy_errors;
};

// The callbacks install_globals hands to the scripts. Each reaches its call's CallState through
// the isolate's data slot 0, which Run sets for the call.
void host_log(const v8::FunctionCallbackInfo<v8::Value>& info);
void host_set_timeout(const v8::FunctionCallbackInfo<v8::Value>& info);
void host_clear_timeout(const v8::FunctionCallbackInfo<v8::Value>& info);
void host_queue_microtask(const v8::FunctionCallbackInfo<v8::Value>& info);
void host_structured_clone(const v8::FunctionCallbackInfo<v8::Value>& info);
void host_utf8_length(const v8::FunctionCallbackInfo<v8::Value>& info);
void host_utf8_write(const v8::FunctionCallbackInfo<v8::Value>& info);
void host_utf8_decode(const v8::FunctionCallbackInfo<v8::Value>& info);
void host_fetch(const v8::FunctionCallbackInfo<v8::Value>& info);
void host_read_body(const v8::FunctionCallbackInfo<v8::Value>& info);
// randomFill(uint8array): the kernel's CSPRNG (getrandom(2)), at most 65536 bytes.
void host_random_fill(const v8::FunctionCallbackInfo<v8::Value>& info);
// digest(0..3, input uint8array, output uint8array): SHA-1/256/384/512 by node's OpenSSL.
void host_digest(const v8::FunctionCallbackInfo<v8::Value>& info);
// Uses every digest once, so that OpenSSL has found its implementations before the lockdown.
void warm_crypto();
// abortFetch(promise): the pending fetch whose hostFetch promise it is is dropped (fetch's
// AbortSignal): its answer is not delivered and the call stops waiting for it.
void host_abort_fetch(const v8::FunctionCallbackInfo<v8::Value>& info);
// loadVendor(n) -> the factory of a bundle of js/vendor/, n a Vendor, compiled into the calling
// context (run_vendor_script, with the process's code cache where it has one): whatwg-url.js
// (URL and URLSearchParams), which bootstrap.js asks for on a call's first use of either;
// tr46.js (its UTS #46 part), which whatwg-url.js asks for on its first non-ASCII host name;
// encodings.js (the Encoding Standard's labels and legacy decoders), which TextDecoder asks for
// on its first label other than UTF-8, UTF-16 and windows-1252; js/web.js (Event, AbortController,
// crypto, Blob, FormData, …), which bootstrap.js asks for on a call's first use of one. None is in
// the globals snapshot
// (globals_snapshot.h says why), and one host function for the three keeps it small.
void host_load_vendor(const v8::FunctionCallbackInfo<v8::Value>& info);

// Every host function a context of the sandbox can hold, for the startup snapshot: V8 stores a
// function's callback as an index into this list. Null-terminated.
const intptr_t* external_references();

}  // namespace codemode::isolate::detail
