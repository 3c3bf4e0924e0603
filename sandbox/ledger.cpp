#include "sandbox/ledger.h"

#include <chrono>
#include <string>
#include <string_view>
#include <utility>

#include "net/ascii.h"
#include "net/percent.h"

namespace codemode::sandbox {

namespace {

// Longest path and method a record keeps; the code can build a URL of any length at run time.
constexpr std::size_t kMaxPathBytes = 256;
constexpr std::size_t kMaxMethodBytes = 16;
constexpr std::size_t kMaxErrorBytes = 300;
// A request the code gave up on (its AbortSignal) before it was answered.
constexpr std::string_view kAborted =
    "runtime: aborted by the code's AbortSignal before its response";

// `text` up to the first of `stop`, at most `max` bytes, with every byte outside `keep`
// (printable ASCII) percent-encoded: the code chose these bytes, and the record goes into JSON
// (which needs valid UTF-8) and logs.
std::string printable(std::string_view text, std::string_view stop, std::size_t max,
                      const net::ByteSet& keep = net::kPrintable) {
  std::string out;
  for (const char c : text) {
    if (stop.find(c) != std::string_view::npos) break;
    if (out.size() + 3 > max) {
      out += "...";
      break;
    }
    if (keep.contains(c)) {
      out += c;
    } else {
      net::append_percent_encoded(out, static_cast<unsigned char>(c));
    }
  }
  return out;
}

// The response's media type without parameters (`text/html`), for the failure text: a 404 that
// is an HTML page says the URL is wrong, not the data.
std::string media_type(const gateway::Headers& headers) {
  for (const auto& [name, value] : headers) {
    if (net::iequals(name, "content-type")) return printable(value, "; ", kMaxMethodBytes * 4);
  }
  return {};
}

}  // namespace

void RequestLedger::move_into(channel::Outcome& outcome) {
  std::lock_guard lock(mutex_);
  outcome.requests = std::move(kept_);
  outcome.fetches = fetches_;
  outcome.subrequests = fetches_ - refused_;
  kept_.clear();
}

channel::Fetcher record_requests(channel::Fetcher inner, std::shared_ptr<RequestLedger> ledger) {
  return [inner = std::move(inner), ledger = std::move(ledger)](gateway::OutboundRequest request,
                                                                const channel::FetchDone& done) {
    std::size_t slot = RequestLedger::kMaxKept;
    {
      std::lock_guard lock(ledger->mutex_);
      ++ledger->fetches_;
      if (ledger->kept_.size() < RequestLedger::kMaxKept) {
        slot = ledger->kept_.size();
        channel::RequestRecord& record = ledger->kept_.emplace_back();
        record.method = printable(request.method, "", kMaxMethodBytes);
        record.path = printable(request.url, "?#", kMaxPathBytes);
      }
    }
    const auto started = std::chrono::steady_clock::now();
    const std::shared_ptr<gateway::FetchAbort>& abort = done.abort();
    if (abort && slot < RequestLedger::kMaxKept) {
      // Noted as soon as the code gives up on it: the call may end, and take the ledger, before
      // the gateway's answer (the aborted request's error) arrives.
      abort->on_abort([weak = std::weak_ptr<RequestLedger>(ledger),
                       weak_abort = std::weak_ptr<gateway::FetchAbort>(abort), slot] {
        auto kept = weak.lock();
        auto aborted = weak_abort.lock();
        if (!kept || !aborted || aborted->cause() != gateway::AbortCause::signal) return;
        std::lock_guard lock(kept->mutex_);
        if (slot < kept->kept_.size() && kept->kept_[slot].status == 0 &&
            kept->kept_[slot].error.empty()) {
          kept->kept_[slot].error = std::string(kAborted);
        }
      });
    }
    inner(std::move(request), done.wrap([ledger, slot, started, done,
                                         abort](gateway::FetchResult result) {
      // An aborted request keeps what it was noted as when given up on: aborted by the code,
      // or, stopped by the call's end, no answer before the call ended (what the failure text
      // says).
      if (abort && abort->aborted()) return done(std::move(result));
      {
        std::lock_guard lock(ledger->mutex_);
        const auto* error = std::get_if<gateway::GatewayError>(&result);
        if (error != nullptr && error->kind == gateway::ErrorKind::policy) ++ledger->refused_;
        if (slot < ledger->kept_.size()) {  // not yet moved into the outcome
          channel::RequestRecord& record = ledger->kept_[slot];
          record.ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                  .count();
          if (const auto* response = std::get_if<gateway::InboundResponse>(&result)) {
            record.status = response->status;
            record.content_type = media_type(response->headers);
          } else {
            record.error = printable(error->text(), "", kMaxErrorBytes, net::kPrintableWithSpace);
          }
        }
      }
      done(std::move(result));
    }));
  };
}

}  // namespace codemode::sandbox
