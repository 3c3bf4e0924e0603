// Text into and out of V8 for the sandbox's host code: strings, a thrown value as one line of
// error text, a script compiled from source. Bounded: the host copies only what it keeps of a
// string the code made. Internal to sandbox/.
#pragma once

#include <v8.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace codemode::isolate::detail {

inline constexpr std::size_t kMaxErrorChars = 2000;

inline v8::Local<v8::String> v8_string(v8::Isolate* isolate, std::string_view text) {
  return v8::String::NewFromUtf8(isolate, text.data(), v8::NewStringType::kNormal,
                                 static_cast<int>(text.size()))
      .ToLocalChecked();
}

// At most `max_bytes` of a string's UTF-8 (whole characters), and how many UTF-16 units were
// left out. Code can make strings of 2^29 characters; the host copies only what it keeps.
struct Utf8Prefix {
  std::string text;
  std::size_t dropped = 0;
};
inline Utf8Prefix utf8_prefix(v8::Isolate* isolate, v8::Local<v8::String> value,
                              std::size_t max_bytes) {
  const std::size_t length = static_cast<std::size_t>(value->Length());
  Utf8Prefix out;
  out.text.resize(std::min(length * 3, max_bytes));
  std::size_t units = 0;
  const std::size_t written =
      value->WriteUtf8V2(isolate, out.text.data(), out.text.size(),
                         v8::String::WriteFlags::kReplaceInvalidUtf8, &units);
  out.text.resize(written);
  out.dropped = length - std::min(length, units);
  return out;
}

inline std::string utf8(v8::Isolate* isolate, v8::Local<v8::Value> value) {
  v8::String::Utf8Value text(isolate, value);
  return *text ? std::string(*text, text.length()) : std::string();
}

inline void throw_type_error(v8::Isolate* isolate, std::string_view message) {
  isolate->ThrowException(v8::Exception::TypeError(v8_string(isolate, message)));
}

// `unconverted`: characters already left out before the text reached the host.
inline std::string one_line(std::string text, std::size_t unconverted = 0) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > kMaxErrorChars || unconverted > 0) {
    const std::size_t cut = text.size() - std::min(text.size(), kMaxErrorChars) + unconverted;
    text.resize(kMaxErrorChars);
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
      text.pop_back();
    if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
    text += "…[" + std::to_string(cut) + " chars dropped]";
  }
  return text;
}

// "TypeError: x is not a function" for a thrown value, computed by V8 without running any of
// the code's getters (message text is built side-effect free), and without stack frames.
inline std::string describe_exception(v8::Isolate* isolate, v8::Local<v8::Value> exception) {
  v8::Local<v8::Message> message = v8::Exception::CreateMessage(isolate, exception);
  Utf8Prefix text = utf8_prefix(isolate, message->Get(), kMaxErrorChars + 64);
  constexpr std::string_view kUncaught = "Uncaught ";
  if (text.text.starts_with(kUncaught)) text.text.erase(0, kUncaught.size());
  return one_line(std::move(text.text), text.dropped);
}

inline v8::MaybeLocal<v8::Script> compile(
    v8::Local<v8::Context> context, std::string_view source, std::string_view name, int line_offset,
    v8::ScriptCompiler::CompileOptions options = v8::ScriptCompiler::kNoCompileOptions) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  v8::ScriptOrigin origin(v8_string(isolate, name), line_offset);
  v8::ScriptCompiler::Source script_source(v8_string(isolate, source), origin);
  return v8::ScriptCompiler::Compile(context, &script_source, options);
}

}  // namespace codemode::isolate::detail
