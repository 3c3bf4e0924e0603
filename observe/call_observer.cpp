#include "observe/call_observer.h"

#include <utility>

#include "base/check.h"
#include "observe/call_audit.h"
#include "observe/metrics.h"
#include "sandbox/sandbox.h"

namespace codemode::server {

struct CallObservation::State {
  SessionAudit observers;
  channel::Tool tool = channel::Tool::search;
  CallSpan span;
  CallFacts facts;
  audit::CallRecord record;  // filled in only with a trail
  std::size_t result_chars = 0;
};

CallObservation::CallObservation() = default;
CallObservation::CallObservation(CallObservation&&) noexcept = default;
CallObservation& CallObservation::operator=(CallObservation&&) noexcept = default;
CallObservation::~CallObservation() = default;

const std::string& CallObservation::audit_id() const {
  CODEMODE_CHECK(state_ != nullptr, "a call's ids are read before it ends, never after");
  return state_->record.id;
}

const CallSpan& CallObservation::span() const {
  CODEMODE_CHECK(state_ != nullptr, "a call's ids are read before it ends, never after");
  return state_->span;
}

void CallObservation::set_code(const std::string& code) {
  if (state_ && state_->observers.trail) state_->record.code = code;
}

void CallObservation::end(const channel::Outcome& outcome, double seconds) {
  const std::unique_ptr<State> state = std::move(state_);
  if (!state) return;
  const SessionAudit& observers = state->observers;
  if (observers.trail) {
    audit::CallRecord& record = state->record;
    record.outcome = outcome.ok ? "ok" : std::string(channel::to_string(outcome.error_kind));
    if (!outcome.ok) record.message = outcome.error_message;
    if (outcome.ok) {
      record.result_chars = sandbox::count_code_points(outcome.result_json);
      record.result_cut = outcome.result_cut || record.result_chars > state->result_chars;
    }
    record.queue_us = outcome.queued_us;
    record.run_us = outcome.sandbox_us;
    record.cpu_us = outcome.cpu_us;
    observers.trail->record(std::move(record));
  }
  if (observers.tracer) observers.tracer->end_call(state->span, state->facts, outcome);
  if (observers.metrics) observers.metrics->call_finished(state->tool, outcome, seconds);
}

CallObservation observe_call(const SessionAudit& observers, CallStart start) {
  auto state = std::make_unique<CallObservation::State>();
  state->observers = observers;
  state->tool = start.tool;
  state->span = observers.tracer
                    ? observers.tracer->begin_call(start.from_meta, start.from_transport)
                    : begin_call_span(start.from_meta, start.from_transport, NewTraces::none);
  state->facts = std::move(start.facts);
  state->result_chars = start.result_chars;
  if (observers.trail) {
    audit::CallRecord& record = state->record;
    record.id = audit::new_record_id();
    record.time_us = audit::now_us();
    record.principal = std::move(start.principal);
    record.client_name = std::move(start.client_name);
    record.client_version = std::move(start.client_version);
    record.session = std::move(start.session);
    record.transport = observers.transport;
    record.tool = std::string(channel::to_string(start.tool));
    record.trace_id = state->span.trace_id;
  }
  CallObservation observation;
  observation.state_ = std::move(state);
  return observation;
}

}  // namespace codemode::server
