#include "sandbox/sandbox.h"

#include <algorithm>
#include <cctype>

namespace codemode::sandbox {

std::size_t count_code_points(std::string_view utf8) {
  return static_cast<std::size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::optional<Outcome> check_input(std::string_view code, const config::Limits& limits) {
  const std::size_t chars = count_code_points(code);
  if (chars > limits.code_chars) {
    return Outcome::failure(ErrorKind::input, "code is " + std::to_string(chars) +
                                                  " characters; the limit is " +
                                                  std::to_string(limits.code_chars));
  }
  const bool blank = std::all_of(
      code.begin(), code.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  if (blank) {
    return Outcome::failure(ErrorKind::input,
                            "code is empty; send an async arrow function such as "
                            "async () => Object.keys(spec.paths)");
  }
  return std::nullopt;
}

Sandbox::Sandbox(SandboxOptions options) : options_(std::move(options)) {
  unsigned n = options_.workers != 0 ? options_.workers : std::thread::hardware_concurrency();
  n = std::max(1u, n);
  workers_.reserve(n);
  for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { worker_loop(); });
}

Sandbox::~Sandbox() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void Sandbox::submit(Call call, Completion done) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(Job{std::move(call), std::move(done)});
  }
  wake_.notify_one();
}

void Sandbox::worker_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job.done(run(job.call));
  }
}

Outcome Sandbox::run(const Call& call) {
  // TODO(sandbox): run the code in a fresh V8 isolate (issue 3).
  return Outcome::failure(ErrorKind::runtime, std::string(to_string(call.tool)) +
                                                  " is not available yet: this build has no "
                                                  "JavaScript sandbox");
}

}  // namespace codemode::sandbox
