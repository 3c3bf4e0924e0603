#include "audit/writer.h"

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

#include "net/escape.h"

namespace codemode::audit {

Writer::Writer(std::unique_ptr<Store> store, WriterOptions options)
    : store_(std::move(store)),
      options_(std::move(options)),
      share_(options_.principal_share > 0 ? options_.principal_share
                                          : std::max<std::size_t>(1, options_.queue / 10)) {
  thread_ = std::thread([this] { run(); });
}

Writer::~Writer() { stop(); }

Admission Writer::admit(std::string_view principal) const {
  if (options_.on_failure == config::Audit::OnFailure::drop) return Admission::admitted;
  std::lock_guard lock(mutex_);
  if (!store_up_) return Admission::store_down;
  if (counted_ >= options_.queue) return Admission::queue_full;
  const auto it = waiting_.find(std::string(principal));
  if (it != waiting_.end() && it->second.records >= share_) return Admission::share_full;
  return Admission::admitted;
}

void Writer::record(Record record) {
  if (auto* call = std::get_if<CallRecord>(&record)) {
    if (call->id.empty()) call->id = new_record_id();
  } else {
    auto& request = std::get<RequestRecord>(record);
    if (request.id.empty()) request.id = new_record_id();
  }
  const std::string principal = principal_of(record);
  bool tell = false;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      ++dropped_;
      return;
    }
    Waiting& waiting = waiting_[principal];
    if (options_.on_failure == config::Audit::OnFailure::drop &&
        (waiting.records >= share_ || queue_.size() + in_hand_ >= options_.queue)) {
      ++dropped_;
      if (waiting.records >= share_) ++over_share_;
      if (waiting.records == 0) waiting_.erase(principal);
      return;
    }
    if (++waiting.records <= share_) ++counted_;
    if (waiting.records == share_ && !waiting.told) tell = waiting.told = true;
    queue_.push_back(std::move(record));
    ++accepted_;
  }
  wake_.notify_one();
  if (tell) {
    spdlog::warn("audit: principal {} has {} records waiting, its whole share of the queue; {}",
                 net::escape_text(principal), share_,
                 options_.on_failure == config::Audit::OnFailure::fail_closed
                     ? "its new calls are refused until the store catches up"
                     : "its further records are dropped until the store catches up");
  }
}

void Writer::release(const std::string& principal) {
  const auto it = waiting_.find(principal);
  if (it == waiting_.end()) return;
  if (it->second.records-- <= share_) --counted_;
  if (it->second.records == 0) waiting_.erase(it);
}

Writer::Stats Writer::stats() const {
  std::lock_guard lock(mutex_);
  return Stats{written_,  dropped_,  over_share_, queue_.size() + in_hand_,
               failures_, replaced_, escaped_,    refused_,
               trimmed_,  store_up_, last_error_};
}

bool Writer::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const std::uint64_t target = accepted_;
  return progress_.wait_for(lock, timeout, [&] { return settled_ >= target; });
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

std::size_t Writer::settle(std::span<const Entry> entries, std::span<const Record> records,
                           std::optional<StoreError>& down) {
  auto error = store_->append(options_.server, entries, now_us());
  if (!error) return entries.size();
  if (error->kind == StoreError::Kind::unavailable) {
    down = std::move(error);
    return 0;
  }
  if (entries.size() > 1) {
    // Halves, front first, so that the order of records is kept and the one refused is found
    // in a few transactions.
    const std::size_t half = entries.size() / 2;
    const std::size_t front = settle(entries.first(half), records.first(half), down);
    if (front < half) return front;
    return half + settle(entries.subspan(half), records.subspan(half), down);
  }
  // This record, alone, is what the store refuses: stored escaped instead.
  const Record replacement = escaped(records.front());
  const Entry entry{summarize(replacement), canonical_json(replacement)};
  auto again = store_->append(options_.server, std::span<const Entry>(&entry, 1), now_us());
  if (again && again->kind == StoreError::Kind::unavailable) {
    down = std::move(again);
    return 0;
  }
  const std::string id = net::escape_text(entries.front().summary.id);
  if (!again) {
    spdlog::warn("audit: {} refused record {} as it came ({}); it is stored with its text escaped",
                 store_->describe(), id, net::escape_text(error->text));
  } else {
    spdlog::error("audit: {} refused record {} even with its text escaped ({}); it is dropped",
                  store_->describe(), id, net::escape_text(again->text));
  }
  std::lock_guard lock(mutex_);
  ++(again ? refused_ : escaped_);
  if (again) ++dropped_;
  return 1;
}

void Writer::trim() {
  auto trimmed = store_->trim(options_.retention, now_us());
  if (auto* n = std::get_if<std::uint64_t>(&trimmed)) {
    std::lock_guard lock(mutex_);
    trimmed_ += *n;
  } else {
    spdlog::warn("audit: retention could not trim: {}",
                 net::escape_text(std::get<std::string>(trimmed)));
  }
}

Writer::Next Writer::take_batch(std::vector<Record>& batch,
                                std::optional<std::chrono::steady_clock::time_point> trim_at) {
  std::unique_lock lock(mutex_);
  if (batch.empty()) {
    const auto ready = [&] { return stopping_ || !queue_.empty(); };
    if (trim_at) {
      wake_.wait_until(lock, *trim_at, ready);
    } else {
      wake_.wait(lock, ready);
    }
    if (queue_.empty()) return stopping_ ? Next::stop : Next::look_again;
    const std::size_t n = std::min(options_.batch, queue_.size());
    for (std::size_t i = 0; i < n; ++i) {
      owners_.push_back(principal_of(queue_.front()));
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    in_hand_ = n;
  }
  if (stopping_ && std::chrono::steady_clock::now() >= stop_by_) return Next::stop;
  return Next::write;
}

namespace {

// The batch as the store's entries; how many records had text that was not valid UTF-8.
std::uint64_t encode_batch(std::vector<Record>& batch, std::vector<Entry>& entries) {
  std::uint64_t replaced = 0;
  for (Record& record : batch) {
    // Hashed here, off the caller's thread: code may be 20,000 characters.
    auto* call = std::get_if<CallRecord>(&record);
    if (call && call->code_sha256.empty()) call->code_sha256 = sha256_hex(call->code);
    if (make_valid_utf8(record)) ++replaced;
    entries.push_back(Entry{summarize(record), canonical_json(record)});
  }
  return replaced;
}

}  // namespace

void Writer::note_store_state(const std::optional<StoreError>& down) {
  if (!down) {
    if (down_logged_) spdlog::info("audit: {} takes records again", store_->describe());
    down_logged_ = false;
    store_up_ = true;
    return;
  }
  ++failures_;
  last_error_ = down->text;
  store_up_ = false;
  if (!down_logged_) {
    spdlog::error("audit: {} is down ({}); {}", store_->describe(), net::escape_text(down->text),
                  options_.on_failure == config::Audit::OnFailure::fail_closed
                      ? "new calls are refused until it takes records again"
                      : "records are dropped while the queue is full");
    down_logged_ = true;
  }
}

void Writer::run() {
  using Clock = std::chrono::steady_clock;
  const bool trims = options_.retention.max_age_days > 0 || options_.retention.max_bytes > 0;
  auto next_trim = Clock::now();
  std::chrono::milliseconds retry = options_.first_retry;
  std::vector<Record> batch;
  std::vector<Entry> entries;
  std::uint64_t refused_seen = 0;  // refused_ as last counted out of written_
  while (true) {
    if (trims && Clock::now() >= next_trim) {
      next_trim = Clock::now() + options_.trim_interval;
      trim();
    }
    const Next next = take_batch(batch, trims ? std::optional(next_trim) : std::nullopt);
    if (next == Next::stop) break;
    if (next == Next::look_again) continue;
    const std::uint64_t replaced = entries.empty() ? encode_batch(batch, entries) : 0;
    std::optional<StoreError> down;
    const std::size_t done = settle(entries, batch, down);
    std::unique_lock lock(mutex_);
    replaced_ += replaced;
    for (std::size_t i = 0; i < done; ++i) release(owners_[i]);
    settled_ += done;
    written_ += done - (refused_ - refused_seen);  // a refused record was settled, not written
    refused_seen = refused_;
    batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(done));
    entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(done));
    owners_.erase(owners_.begin(), owners_.begin() + static_cast<std::ptrdiff_t>(done));
    in_hand_ = batch.size();
    if (done > 0) progress_.notify_all();
    note_store_state(down);
    if (!down) {
      retry = options_.first_retry;
      continue;
    }
    // Wait before retrying; stop() cuts the wait short only when its grace is over.
    const auto until = Clock::now() + retry;
    wake_.wait_until(lock, stopping_ ? std::min(until, stop_by_) : until,
                     [&] { return stopping_ && Clock::now() >= stop_by_; });
    retry = std::min(retry * 2, options_.last_retry);
  }
  drop_unwritten();
}

void Writer::drop_unwritten() {
  std::lock_guard lock(mutex_);
  const std::uint64_t lost = queue_.size() + in_hand_;
  if (lost > 0) {
    spdlog::error("audit: {} records were not written before the writer stopped", lost);
    dropped_ += lost;
    settled_ += lost;
    queue_.clear();
    in_hand_ = 0;
    owners_.clear();
    waiting_.clear();
    counted_ = 0;
  }
  progress_.notify_all();
}

}  // namespace codemode::audit
