// What an execute call's fetches did, as the call's own ledger: the model sees it in the tool
// result (structuredContent.requests), so it can tell what its code sent without logging it.
// Daemon side; no V8.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "channel/call_control.h"
#include "channel/outcome.h"

namespace codemode::sandbox {

// The requests of one call, filled by the Fetcher that record_requests() wraps. The gateway
// completes a fetch on its I/O thread and the pool reads the ledger on its executor, so it
// locks.
class RequestLedger {
 public:
  // Requests kept in order; later ones are counted in `fetches` only.
  static constexpr std::size_t kMaxKept = 50;

  // Moves the records into `outcome` (requests, fetches, subrequests).
  void move_into(channel::Outcome& outcome);

 private:
  friend channel::Fetcher record_requests(channel::Fetcher inner,
                                          std::shared_ptr<RequestLedger> ledger);
  std::mutex mutex_;
  std::vector<channel::RequestRecord> kept_;
  std::uint32_t fetches_ = 0;
  std::uint32_t refused_ = 0;  // answered with the gateway's policy refusal
};

// `inner`, with each request and its answer (status, or the refusal or failure) noted in
// `ledger`: method, the URL as the code wrote it without its query, milliseconds. A request the
// code's AbortSignal gave up on (FetchDone::abort) is noted as aborted; one still in flight when
// the call ends stays without an answer.
channel::Fetcher record_requests(channel::Fetcher inner, std::shared_ptr<RequestLedger> ledger);

}  // namespace codemode::sandbox
