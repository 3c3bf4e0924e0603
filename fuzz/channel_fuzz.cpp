// Fuzzes the channel the daemon reads from its sandbox processes (channel/frames.h): the byte
// stream a compromised process controls completely. The input is cut into frames by a
// FrameReader with the daemon's limits, in pieces whose sizes come from the input's first
// byte, and every body is decoded.
//
// Invariants: nothing throws or overflows the stack (the decoder bounds nesting before the
// recursive MessagePack reader runs); after a length over the limit the reader reports an error
// and the test stops, as the daemon kills the process; every message that decodes re-encodes
// to a body that decodes to a message of the same type, and a second round trip gives the same
// bytes (encoding is deterministic, so nothing depends on which copy the daemon keeps).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "channel/frames.h"
#include "fuzz/check.h"

using namespace codemode;

namespace {

void check_round_trip(const channel::Message& message) {
  const std::string body = channel::encode_body(message);
  auto again = channel::decode(body);
  FUZZ_CHECK(std::holds_alternative<channel::Message>(again), "an encoded message decodes");
  const auto& copy = std::get<channel::Message>(again);
  FUZZ_CHECK(copy.index() == message.index(), "a round trip keeps the message type");
  FUZZ_CHECK(channel::encode_body(copy) == body, "encoding is deterministic and lossless");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The daemon's limit for a process's frames with the default heap_mb (64): 144 MiB.
  channel::FrameReader reader(std::size_t{144} << 20);
  while (!input.empty()) {
    const std::size_t take = std::min(piece, input.size());
    reader.append(input.substr(0, take));
    input.remove_prefix(take);
    for (;;) {
      auto next = reader.next();
      if (std::holds_alternative<channel::DecodeError>(next)) return 0;  // the process is killed
      auto& body = std::get<std::optional<std::string>>(next);
      if (!body) break;
      auto decoded = channel::decode(*body);
      if (auto* message = std::get_if<channel::Message>(&decoded)) check_round_trip(*message);
    }
  }
  return 0;
}
