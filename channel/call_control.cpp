#include "channel/call_control.h"

namespace codemode::channel {

void CancelToken::cancel() {
  std::lock_guard lock(mutex_);
  if (cancelled_) return;
  cancelled_ = true;
  if (on_cancel_) on_cancel_();
}

bool CancelToken::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

}  // namespace codemode::channel
