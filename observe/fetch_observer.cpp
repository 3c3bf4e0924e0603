#include "observe/fetch_observer.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "audit/record.h"

namespace codemode::server {

void FetchObserver::on_send(const ObservedCall&, ObservedFetch&, gateway::OutboundRequest&) {}

channel::Fetcher observe_fetches(channel::Fetcher fetch, ObservedCall call,
                                 std::vector<FetchObserver*> observers) {
  observers.erase(std::remove(observers.begin(), observers.end(), nullptr), observers.end());
  if (!fetch || observers.empty()) return fetch;
  auto observed = std::make_shared<const ObservedCall>(std::move(call));
  return [observers = std::move(observers), observed, fetch = std::move(fetch)](
             gateway::OutboundRequest request, const channel::FetchDone& done) {
    auto seen = std::make_shared<ObservedFetch>();
    seen->method = request.method;
    seen->url = request.url;
    seen->sent_bytes = request.body.size();
    seen->started_unix_us = audit::now_us();
    for (FetchObserver* observer : observers) observer->on_send(*observed, *seen, request);
    seen->started = std::chrono::steady_clock::now();
    fetch(std::move(request), done.wrap([observers, observed, seen,
                                         done](gateway::FetchResult result) {
      seen->seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - seen->started).count();
      for (FetchObserver* observer : observers) observer->on_answer(*observed, *seen, result);
      done(std::move(result));
    }));
  };
}

}  // namespace codemode::server
