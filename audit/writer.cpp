#include "audit/writer.h"

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

namespace codemode::audit {

Writer::Writer(std::unique_ptr<Store> store, WriterOptions options)
    : store_(std::move(store)), options_(std::move(options)) {
  thread_ = std::thread([this] { run(); });
}

Writer::~Writer() { stop(); }

bool Writer::accepting() const {
  if (options_.on_failure == config::Audit::OnFailure::drop) return true;
  return store_up_.load(std::memory_order_relaxed) &&
         pending_.load(std::memory_order_relaxed) < options_.queue;
}

void Writer::record(Record record) {
  if (auto* call = std::get_if<CallRecord>(&record)) {
    if (call->id.empty()) call->id = new_record_id();
  } else {
    auto& request = std::get<RequestRecord>(record);
    if (request.id.empty()) request.id = new_record_id();
  }
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || (options_.on_failure == config::Audit::OnFailure::drop &&
                      queue_.size() + in_hand_ >= options_.queue)) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(record));
    ++accepted_;
    pending_.store(queue_.size() + in_hand_, std::memory_order_relaxed);
  }
  wake_.notify_one();
}

Writer::Stats Writer::stats() const {
  std::lock_guard lock(mutex_);
  return Stats{written_,         dropped_,   queue_.size() + in_hand_, failures_, trimmed_,
               store_up_.load(), last_error_};
}

bool Writer::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const std::uint64_t target = accepted_;
  return progress_.wait_for(lock, timeout, [&] { return written_ + lost_at_stop_ >= target; });
}

void Writer::stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      stop_by_ = std::chrono::steady_clock::now() + grace;
    }
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Writer::run() {
  using Clock = std::chrono::steady_clock;
  const bool trims = options_.retention.max_age_days > 0 || options_.retention.max_bytes > 0;
  auto next_trim = Clock::now();
  std::chrono::milliseconds retry = options_.first_retry;
  std::vector<Record> batch;
  std::vector<Entry> entries;
  bool logged_down = false;
  while (true) {
    // Retention, between batches.
    if (trims && Clock::now() >= next_trim) {
      next_trim = Clock::now() + options_.trim_interval;
      auto trimmed = store_->trim(options_.retention, now_us());
      if (auto* n = std::get_if<std::uint64_t>(&trimmed)) {
        std::lock_guard lock(mutex_);
        trimmed_ += *n;
      } else {
        spdlog::warn("audit: retention could not trim: {}", std::get<std::string>(trimmed));
      }
    }
    {
      std::unique_lock lock(mutex_);
      if (batch.empty()) {
        const auto ready = [&] { return stopping_ || !queue_.empty(); };
        if (trims) {
          wake_.wait_until(lock, next_trim, ready);
        } else {
          wake_.wait(lock, ready);
        }
        if (queue_.empty()) {
          if (stopping_) break;
          continue;
        }
        const std::size_t n = std::min(options_.batch, queue_.size());
        for (std::size_t i = 0; i < n; ++i) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        in_hand_ = n;
      }
      if (stopping_ && Clock::now() >= stop_by_) break;
    }
    if (entries.empty()) {
      for (Record& record : batch) {
        // Hashed here, off the caller's thread: code may be 20,000 characters.
        auto* call = std::get_if<CallRecord>(&record);
        if (call && call->code_sha256.empty()) call->code_sha256 = sha256_hex(call->code);
        entries.push_back(Entry{summarize(record), canonical_json(record)});
      }
    }
    auto error = store_->append(options_.server, entries, now_us());
    std::unique_lock lock(mutex_);
    if (!error) {
      written_ += batch.size();
      in_hand_ = 0;
      pending_.store(queue_.size(), std::memory_order_relaxed);
      batch.clear();
      entries.clear();
      retry = options_.first_retry;
      if (logged_down) spdlog::info("audit: {} takes records again", store_->describe());
      logged_down = false;
      store_up_.store(true);
      progress_.notify_all();
      continue;
    }
    ++failures_;
    last_error_ = *error;
    store_up_.store(false);
    if (!logged_down) {
      spdlog::error("audit: {} is down ({}); {}", store_->describe(), *error,
                    options_.on_failure == config::Audit::OnFailure::fail_closed
                        ? "new calls are refused until it takes records again"
                        : "records are dropped while the queue is full");
      logged_down = true;
    }
    // Wait before retrying; stop() cuts the wait short only when its grace is over.
    const auto until = Clock::now() + retry;
    wake_.wait_until(lock, stopping_ ? std::min(until, stop_by_) : until,
                     [&] { return stopping_ && Clock::now() >= stop_by_; });
    retry = std::min(retry * 2, options_.last_retry);
  }
  std::lock_guard lock(mutex_);
  const std::uint64_t lost = queue_.size() + in_hand_;
  if (lost > 0) {
    spdlog::error("audit: {} records were not written before the writer stopped", lost);
    dropped_ += lost;
    lost_at_stop_ += lost;
    queue_.clear();
    in_hand_ = 0;
    pending_.store(0);
  }
  progress_.notify_all();
}

}  // namespace codemode::audit
